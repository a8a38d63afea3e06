"""Which chip a trace ran on, from its ``deviceProperties``; which kernels ran in TF32.

The profiler writes each GPU's name as the driver reports it (``NVIDIA A100-SXM4-80GB``,
``Tesla V100-SXM2-16GB``, ``NVIDIA A100-PG509-200``, ``NVIDIA H100 80GB HBM3``) and its
memory in bytes. The name's model word (``a100``, ``v100``, ``h100``) with its form factor
(``sxm``, ``pcie``) and memory size picks a built-in chip. Chips of one model share their
peaks and, where the catalog has one spec for several memory sizes (the V100's 16 and 32
GB), their bandwidth: the bounds do not depend on the capacity.

ROCm traces may name the device ``AMD Radeon Graphics`` or nothing at all: such a device is
identified by its compute units (``numSms``, CUs on AMD) and memory size against the
catalog's specs (``device.compute_units``, ``memory.capacity``), two chips that share both
told apart by their clock (``clockRate`` against ``clock.boost``), or refused in one line
naming ``--hw`` (:func:`by_units`, which a jax.profiler trace's device plane goes through
too). A chip whose devices are its dies (``device.is: die``, an MI250X's GCDs)
is priced as one die, the spec ``device.die`` names.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..errors import UnknownHardwareError, brief
from ..hardware import get_hardware, list_hardware

if TYPE_CHECKING:
    from ..hardware import Hardware

#: Kernel names of NVIDIA's libraries that run fp32 work on the tensor cores in TF32:
#: CUTLASS ``tensorop_s1688gemm``/``s16816gemm`` (the ``s`` is fp32 in, fp32 out on tensor
#: ops), cuBLAS/cuDNN ``xmma``/``ampere`` kernels named ``tf32``.
TF32 = re.compile(r"tensorop_s\d+gemm|tf32|_s1688|_s16816", re.IGNORECASE)


def runs_tf32(kernel_names: list[str]) -> bool:
    """Whether any of *kernel_names* is a TF32 tensor-core kernel."""
    return any(TF32.search(name) for name in kernel_names)


#: Device names that say no model: ROCm's generic name, and none.
GENERIC = re.compile(r"^\s*(amd\s+)?(radeon(\s+graphics)?|instinct)?\s*$", re.IGNORECASE)


def chip_of(device: dict[str, Any] | None) -> Hardware:
    """The built-in chip of a trace's first ``deviceProperties`` entry (one die of a chip
    whose devices are dies), or an UnknownHardwareError that says to name it (``--hw``,
    ``hw=``)."""
    if not device or not (device.get("name") or _compute_units(device)
                          or device.get("totalGlobalMem")):
        raise UnknownHardwareError("the trace names no GPU (no deviceProperties: a CPU "
                                   "trace, or an old profiler): name the chip with --hw "
                                   "(or hw=), e.g. --hw a100")
    name = str(device.get("name") or "")
    chip = _by_units(device) if GENERIC.match(name) else _by_name(name, device)
    return as_device(chip)


def as_device(chip: Hardware) -> Hardware:
    """The chip one device of *chip* is: the chip itself, or the spec of one of its dies."""
    return get_hardware(chip.die) if chip.device_is == "die" and chip.die else chip


def _compute_units(device: dict[str, Any]) -> int | None:
    value = device.get("numSms", device.get("multiProcessorCount"))
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def _by_units(device: dict[str, Any]) -> Hardware:
    """The one built-in chip (a device of it) with the trace device's compute units and a
    memory within 12% of its size, or a one-line error naming ``--hw``."""
    units = _compute_units(device)
    memory = float(device.get("totalGlobalMem") or 0)
    shown = (f"the trace's device {brief(str(device.get('name') or ''), 40)} "
             f"({units or 'unknown'} compute units, {memory / 2**30:.0f} GiB)")
    if units is None or memory <= 0:
        raise UnknownHardwareError(f"{shown} names no model, and its compute units and memory "
                                   f"are not both recorded: name the chip with --hw (hw=)")
    return by_units(units, memory, clock=_clock(device), shown=shown)


def _clock(device: dict[str, Any]) -> float | None:
    """The device's clock in Hz (``clockRate``, in kHz as CUDA and HIP report it)."""
    value = device.get("clockRate")
    return float(value) * 1e3 if isinstance(value, (int, float)) and not isinstance(
        value, bool) and value > 0 else None


def by_units(units: int, memory: float, *, clock: float | None = None,
             shown: str = "the trace's device") -> Hardware:
    """The one built-in chip with *units* compute units and a memory (B) within 12% of its
    capacity; where several fit (MI350X and MI355X: 256 CUs, 288 GB each), the one whose
    spec's clock is the device's *clock* (Hz) within 5% (2.2 against 2.4 GHz); else a
    one-line error naming ``--hw``. One rule for a Kineto trace's ``deviceProperties`` and a
    jax.profiler trace's device plane alike."""
    found = []
    for name in list_hardware():
        chip = get_hardware(name)
        if chip.device_is == "module" and chip.compute_units == units and \
                abs(chip.memory_capacity - memory) / chip.memory_capacity < 0.12:
            found.append(chip)
    if len(found) > 1 and clock:
        timed = [c for c in found if c.clock and abs(c.clock - clock) / c.clock < 0.05]
        found = timed or found
    if len(found) != 1:
        which = (f"it fits {', '.join(c.name for c in found)}" if found else
                 "no built-in chip has them")
        raise UnknownHardwareError(f"{shown} names no model and {which}: name the chip with "
                                   f"--hw (hw=)")
    return found[0]


def nearest_size(memory: float, sizes: tuple[float, ...]) -> float | None:
    """The memory size (GB) of *sizes* nearest a device's reported *memory* (GB) within
    12%, or None where none is, or two are about as near (within 2% of each other's
    distance). Drivers report the memory less what they keep, and in GiB where the product
    says GB: an 80 GB H100 reports about 85e9 B, nearer 80 than the 96 of an H20. One rule
    for a Kineto trace's ``totalGlobalMem`` and a jax.profiler device plane's
    ``memory_size``."""
    if not memory > 0:
        return None
    near = sorted((abs(memory - gb) / gb, gb) for gb in sizes)
    if not near or near[0][0] >= 0.12 or (len(near) > 1 and near[1][0] - near[0][0] < 0.02
                                          and near[1][1] != near[0][1]):
        return None
    return near[0][1]


def _by_name(name: str, device: dict[str, Any]) -> Hardware:
    lowered = name.lower().replace("nvidia ", "").replace("tesla ", "")
    model = re.search(r"\b([a-z]+\d+[a-z]*)\b", lowered)
    if model is None:
        raise UnknownHardwareError(f"the trace's GPU {brief(name, 40)} is not a chip name "
                                   f"this catalog knows: name it with --hw (hw=)")
    word = model.group(1)
    memory = float(device.get("totalGlobalMem") or 0) / 1e9
    size = nearest_size(memory, (16, 24, 32, 40, 48, 64, 80, 94, 128, 141, 180, 192))
    form = "pcie" if "pcie" in lowered else "sxm"
    tries = [f"{word}-{size}gb-{form}", f"{word}-{size}gb", f"{word}-{form}", word] if size \
        else [f"{word}-{form}", word]
    for candidate in tries:
        try:
            return get_hardware(candidate)
        except UnknownHardwareError:
            continue
    raise UnknownHardwareError(f"the trace's GPU {brief(name, 40)} is no built-in chip "
                               f"(tried {brief(', '.join(tries), 60)[1:-1]}): name it with "
                               f"--hw (hw=), or a spec file of your own")
