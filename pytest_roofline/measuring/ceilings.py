"""The host's physical limits: its theoretical peaks and its last-level cache, as the OS says.

A calibration times a few kernels: its roofs are what they reached, and a busy moment lowers
them. The alarm "faster than physics" must not move with that, so it reads against figures
no load can lower (:mod:`pytest_roofline.engine.limits`), kept in the calibration's
``provenance.limits``:

* ``peaks``: per precision, every CPU the machine has x 2 FMA units (the most any x86 or Arm
  core issues per clock) x the lanes of its widest vector unit for that precision x 2 FLOPs
  per FMA x the highest clock. Lanes: 512-bit AVX-512, 256-bit AVX/AVX2, 128-bit SSE2 or
  NEON, 512 bits for SVE (the widest shipped); fp64 takes 64 bits a lane, fp32 32, bf16 and
  fp16 16 where the CPU has a bf16 or fp16 dot product (``avx512_bf16``, ``avx512_fp16``,
  Arm's ``bf16``/``fphp``), int8 8 where it has one (VNNI, Arm's ``asimddp``). With AMX,
  bf16 and int8 take AMX's 1,024 and 2,048 operations per clock a core where that is more. A
  precision none of these covers has no figure: no compute limit, never the timed roof.
* The clock: cpufreq's ``cpuinfo_max_freq`` where the OS has it; else the largest of
  ``/proc/cpuinfo``'s ``cpu MHz`` and the model name's ``@ x.xxGHz`` times
  :data:`BOOST_HEADROOM` (those are the current or base clock: a boost runs above them).
* ``llc_B``: the last-level cache, its size times the instances the machine has (one L3 a
  socket or a CCX): the bytes the cache can hold at once.

Every figure here is an upper bound of what the hardware does, so the limit it sets is a
lower bound of any honest time: too generous a peak only makes the alarm later, never false.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from . import probe

__all__ = ["BOOST_HEADROOM", "FMA_UNITS", "host_limits"]

#: FMA pipes a core issues per clock: two on every current x86 and Arm server core.
FMA_UNITS = 2
#: A boost clock over the base or current one that /proc/cpuinfo reports, where cpufreq does
#: not say the highest (a VM): server parts boost up to about 1.55x their base (EPYC 9654:
#: 2.4 -> 3.7 GHz), so 1.6 covers them.
BOOST_HEADROOM = 1.6
_GHZ = re.compile(r"@\s*([0-9.]+)\s*GHz", re.IGNORECASE)


def _flags() -> set[str]:
    text = _read("/proc/cpuinfo")
    for line in text.splitlines():
        if line.lower().startswith(("flags", "features")) and ":" in line:
            return set(line.split(":", 1)[1].split())
    return set()


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def vector_bits(flags: set[str]) -> int | None:
    """The widest vector unit the flags name, in bits (None: none known)."""
    if "avx512f" in flags:
        return 512
    if "sve" in flags:
        return 512
    if "avx2" in flags or "avx" in flags:
        return 256
    if "sse2" in flags or "asimd" in flags:
        return 128
    return None


def highest_clock() -> tuple[float | None, str]:
    """(Hz, how it was read): cpufreq's maximum, else the reported clock with headroom."""
    khz = _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").strip()
    if khz.isdigit() and int(khz) > 0:
        return float(khz) * 1e3, "cpufreq's cpuinfo_max_freq"
    seen = [c for c in (probe.clock(), _model_clock()) if c]
    if not seen:
        return None, "no clock reported"
    return max(seen) * BOOST_HEADROOM, (f"the reported clock x {BOOST_HEADROOM} for a boost "
                                        f"(no cpufreq)")


def _model_clock() -> float | None:
    match = _GHZ.search(probe.cpu_model())
    try:
        return float(match.group(1)) * 1e9 if match else None
    except ValueError:
        return None


def peaks(flags: set[str], cpus: int, clock: float) -> dict[str, float]:
    """FLOP/s per precision (see the module docstring)."""
    bits = vector_bits(flags)
    if bits is None:
        return {}
    per_clock = {"fp64": bits / 64, "fp32": bits / 32}  # FMA lanes a unit
    if flags & {"avx512_bf16", "bf16", "amx_bf16"}:
        per_clock["bf16"] = bits / 16
    if flags & {"avx512_fp16", "fphp", "asimdhp", "amx_fp16"}:
        per_clock["fp16"] = bits / 16
    if flags & {"avx512_vnni", "avx_vnni", "asimddp", "amx_int8"}:
        per_clock["int8"] = bits / 8
    out = {k: cpus * FMA_UNITS * lanes * 2 * clock for k, lanes in per_clock.items()}
    amx = {"bf16": 1024.0, "int8": 2048.0}  # operations per clock a core (Intel AMX)
    for key, ops in amx.items():
        if f"amx_{key}" in flags:
            out[key] = max(out.get(key, 0.0), cpus * ops * clock)
    return out


def llc_bytes() -> float | None:
    """The last-level cache's bytes over the machine (size x instances), or None."""
    found = probe.caches()
    if not found:
        return None
    last = found[-1]
    instances = 1
    shared = _read(f"/sys/devices/system/cpu/cpu0/cache/index{_index_of(last.level)}"
                   f"/shared_cpu_list").strip()
    sharing = _count_cpus(shared)
    cpus = os.cpu_count() or 1
    if sharing:
        instances = max(1, -(-cpus // sharing))
    return last.capacity * instances


def _index_of(level: int) -> int:
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        if _read(str(index / "level")).strip() == str(level) and _read(
                str(index / "type")).strip() in ("Data", "Unified"):
            return int(index.name.removeprefix("index"))
    return level


def _count_cpus(text: str) -> int:
    total = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if lo.strip().isdigit():
            total += (int(hi) - int(lo) + 1) if hi.strip().isdigit() else 1
    return total


def host_limits() -> dict[str, Any]:
    """The host's ``provenance.limits``: ``peaks`` (FLOP/s by precision), ``llc_B`` and a
    ``note`` saying how they were read; a figure the machine does not give is left out."""
    cpus = os.cpu_count() or probe.cores()
    clock, how = highest_clock()
    flags = _flags()
    out: dict[str, Any] = {}
    if clock:
        found = peaks(flags, cpus, clock)
        if found:
            out["peaks"] = {k: float(f"{v:.6g}") for k, v in found.items()}
    llc = llc_bytes()
    if llc:
        out["llc_B"] = llc
    out["note"] = (f"theoretical peaks: {cpus} CPUs x {FMA_UNITS} FMA units x "
                   f"{vector_bits(flags) or '?'}-bit lanes x 2 x {clock or 0:.4g} Hz ({how}); "
                   f"last-level cache as the OS reports it")
    return out
