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

A ``jax.profiler`` trace's device plane goes through the same rules (:func:`plane_chip`):
its vendor, compute capability, memory size, compute units and clock. A TPU is named by its
device type as the TPU runtime writes it (``jax.devices()[0].device_kind``, XProf's
``device_type_string``): ``TPU v4``, ``TPU v5 lite`` (v5e), ``TPU v5`` (v5p), ``TPU v6
lite`` (v6e), ``TPU7x`` (v7), or the product names (``TPU v5e``, ``TPU v6e``, ``TPU v7x``)
(:func:`tpu_of`).
"""

from __future__ import annotations

import functools
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
    return any(_tf32(name) for name in kernel_names)


@functools.lru_cache(maxsize=4096)
def _tf32(name: str) -> bool:
    """A trace of 100,000 events launches a few hundred distinct kernels: each name is
    searched once (a kernel name is a few hundred characters of C++ template)."""
    return TF32.search(name) is not None


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


#: A TPU's device type (lowered, ``tpu`` and spaces left out) -> the built-in chip: the
#: runtime's names (``v5 lite`` is the v5e, ``v5`` alone the v5p, ``v6 lite`` the v6e,
#: ``7x`` the v7) and the product names. The v4 lite (v4i) and older TPUs have no spec.
TPU_KINDS: dict[str, str] = {
    "v4": "tpu-v4", "v5lite": "tpu-v5e", "v5e": "tpu-v5e", "v5litepod": "tpu-v5e",
    "v5": "tpu-v5p", "v5p": "tpu-v5p", "v6lite": "tpu-v6e", "v6e": "tpu-v6e",
    "7x": "tpu-v7", "v7x": "tpu-v7", "v7": "tpu-v7", "ironwood": "tpu-v7"}


def tpu_of(kind: str) -> Hardware:
    """The built-in TPU whose device type is *kind* (``TPU v6 lite``, see
    :data:`TPU_KINDS`), or a one-line error naming ``--hw``."""
    key = re.sub(r"[\s_-]+", "", kind.lower())
    key = key[3:] if key.startswith("tpu") else key
    chip = TPU_KINDS.get(key)
    if chip is None:
        shown = kind if len(kind) <= 40 else kind[:40] + "..."
        raise UnknownHardwareError(f"the trace's TPU {shown!r} is not one of the built-in "
                                   f"TPUs (v4, v5e, v5p, v6e, v7): name it with --hw (hw=)")
    return get_hardware(chip)


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


#: (vendor, compute capability) -> built-in chips by memory size (GB, decimal): the device
#: planes of a ``jax.profiler`` GPU trace carry these, not the product name. An AMD device
#: with its compute units is identified by them first (:func:`by_units`).
_CHIPS: dict[tuple[str, int, int], tuple[tuple[float, str], ...]] = {
    ("amd", 9, 4): ((192, "mi300x"), (256, "mi325x")),
    ("amd", 9, 0): ((128, "mi250x"),),
    ("nvidia", 9, 0): ((80, "h100-sxm"), (96, "h20"), (141, "h200")),
    ("nvidia", 8, 0): ((40, "a100-40gb"), (80, "a100-80gb-sxm")),
    ("nvidia", 7, 0): ((16, "v100"), (32, "v100")),
    ("nvidia", 7, 5): ((16, "t4"),),
}


def plane_chip(stats: dict[str, Any] | None) -> Hardware:
    """The built-in chip a ``jax.profiler`` device plane's stats describe, or an
    UnknownHardwareError that says to name it with ``--hw`` (``hw=``): a TPU by its
    ``device_type_string`` (:func:`tpu_of`), an AMD GPU by its compute units, memory and
    clock (:func:`by_units`), else the nearest memory size of its vendor's compute
    capability (:func:`nearest_size`): the rules a Kineto trace's device goes through. A
    stat that is not a number is named."""
    if not stats:
        raise UnknownHardwareError("the trace names no device (a trace of XLA:CPU): name the "
                                   "chip with --hw (hw=), e.g. a spec of the machine that "
                                   "recorded it")
    kind = stats.get("device_type_string")
    if isinstance(kind, str) and "tpu" in kind.lower():
        return tpu_of(kind)
    vendor = str(stats.get("device_vendor") or "").lower()
    vendor = "nvidia" if "nvidia" in vendor else "amd" if "amd" in vendor else vendor
    major, minor = stats.get("compute_cap_major"), stats.get("compute_cap_minor")
    memory = _number(stats.get("memory_size")) / 1e9
    what = (f"{_short(stats.get('device_vendor')) or 'unknown vendor'} device of compute "
            f"capability {_short(major)}.{_short(minor)} with {memory:.0f} GB")
    for name in ("memory_size", "clock_rate", "core_count"):
        value = stats.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(
                value, (int, float)) or not 0 <= value < 1e30):
            raise UnknownHardwareError(f"the trace's device plane: {name} {_short(value)!r} is "
                                       f"not a number (a count, Hz or bytes): name the chip "
                                       f"with --hw (hw=)")
    units, clock = stats.get("core_count"), _number(stats.get("clock_rate")) * 1e3
    if vendor == "amd" and isinstance(units, int) and not isinstance(units, bool) and \
            units > 0 and memory > 0:
        try:
            return as_device(by_units(units, memory * 1e9, clock=clock or None,
                                      shown=f"the trace's {what}"))
        except UnknownHardwareError:
            pass  # the table below may still know it
    sizes = dict(_CHIPS.get((vendor, major, minor), ())) if isinstance(major, int) and \
        isinstance(minor, int) else {}
    size = nearest_size(memory, tuple(sizes))
    if size is None:
        raise UnknownHardwareError(f"the trace's {what} is not one chip of the catalog: name "
                                   f"it with --hw (hw=)")
    return get_hardware(sizes[size])


def _number(value: Any) -> float:
    """A device stat as a finite number >= 0 (0 where it is missing, text or out of range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    number = float(value) if abs(value) < 1e30 else 0.0
    return number if number >= 0 and number == number else 0.0


def _short(value: Any) -> str:
    text = str(value) if value is not None else ""
    return text if len(text) <= 12 else text[:12] + "..."
