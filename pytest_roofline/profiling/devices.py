"""Which chip a trace ran on, from its ``deviceProperties``; which kernels ran in TF32.

The profiler writes each GPU's name as the driver reports it (``NVIDIA A100-SXM4-80GB``,
``Tesla V100-SXM2-16GB``, ``NVIDIA A100-PG509-200``, ``NVIDIA H100 80GB HBM3``) and its
memory in bytes. The name's model word (``a100``, ``v100``, ``h100``) with its form factor
(``sxm``, ``pcie``) and memory size picks a built-in chip. Chips of one model share their
peaks and, where the catalog has one spec for several memory sizes (the V100's 16 and 32
GB), their bandwidth: the bounds do not depend on the capacity.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..errors import UnknownHardwareError

if TYPE_CHECKING:
    from ..hardware import Hardware

#: Kernel names of NVIDIA's libraries that run fp32 work on the tensor cores in TF32:
#: CUTLASS ``tensorop_s1688gemm``/``s16816gemm`` (the ``s`` is fp32 in, fp32 out on tensor
#: ops), cuBLAS/cuDNN ``xmma``/``ampere`` kernels named ``tf32``.
TF32 = re.compile(r"tensorop_s\d+gemm|tf32|_s1688|_s16816", re.IGNORECASE)


def runs_tf32(kernel_names: list[str]) -> bool:
    """Whether any of *kernel_names* is a TF32 tensor-core kernel."""
    return any(TF32.search(name) for name in kernel_names)


def chip_of(device: dict[str, Any] | None) -> Hardware:
    """The built-in chip of a trace's first ``deviceProperties`` entry, or an
    UnknownHardwareError that says to name it (``--hw``, ``hw=``)."""
    from ..hardware import get_hardware

    if not device or not device.get("name"):
        raise UnknownHardwareError("the trace names no GPU (no deviceProperties: a CPU "
                                   "trace, or an old profiler): name the chip with --hw "
                                   "(or hw=), e.g. --hw a100")
    name = str(device["name"])
    lowered = name.lower().replace("nvidia ", "").replace("tesla ", "")
    model = re.search(r"\b([a-z]+\d+[a-z]*)\b", lowered)
    if model is None:
        raise UnknownHardwareError(f"the trace's GPU {name!r} is not a chip name this "
                                   f"catalog knows: name it with --hw (hw=)")
    word = model.group(1)
    memory = float(device.get("totalGlobalMem") or 0) / 1e9
    size = next((gb for gb in (16, 24, 32, 40, 48, 80, 94, 141, 180, 192)
                 if memory and abs(memory - gb) / gb < 0.12), None)
    form = "pcie" if "pcie" in lowered else "sxm"
    tries = [f"{word}-{size}gb-{form}", f"{word}-{size}gb", f"{word}-{form}", word] if size \
        else [f"{word}-{form}", word]
    for candidate in tries:
        try:
            return get_hardware(candidate)
        except UnknownHardwareError:
            continue
    raise UnknownHardwareError(f"the trace's GPU {name!r} is not one of the built-in chips "
                               f"(tried {', '.join(tries)}): name it with --hw (hw=), or "
                               f"give a spec file of your own")
