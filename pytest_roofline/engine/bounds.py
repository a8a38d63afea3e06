"""A workload's figures on a chip, kernel by kernel, then summed: the bounds the analysis
and the sweeps report (:func:`program`), under the rules of :mod:`.analysis`'s docstring.

Each kernel's compute, memory and network times (:func:`_kernel_bounds`, the epilogues it
hosts timed with it), its time and regime, then the program's sums, the share of time each
resource bounds, and the precision and peak its ridge is taken at. Scalars or numpy arrays
(a sweep) alike; a one-kernel program of floats takes the short path.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import UnsupportedPrecisionError, WorkloadError, brief
from ..hardware import Hardware
from .fusion import kept_on_chip, onchip_level
from .regimes import REGIMES
from .workload import Kernel, Number, Workload, add_up, is_array


def _regime(t_compute: Number, t_memory: Number, t_network: Number) -> Any:
    if not (type(t_compute) is float and type(t_memory) is float  # floats: the common case
            and type(t_network) is float) and (
            is_array(t_compute) or is_array(t_memory) or is_array(t_network)):
        import numpy as np

        c, m, n = np.broadcast_arrays(t_compute, t_memory, t_network)
        codes = np.where(m >= n, 1, 2)
        codes[(c >= m) & (c >= n)] = 0
        return np.array(REGIMES)[codes]
    if t_compute >= t_memory and t_compute >= t_network:
        return "compute"
    return "memory" if t_memory >= t_network else "network"


def _max3(a: Number, b: Number, c: Number) -> Number:
    if not (type(a) is float and type(b) is float and type(c) is float) and (
            is_array(a) or is_array(b) or is_array(c)):
        import numpy as np

        return np.maximum(np.maximum(a, b), c)
    return max(a, b, c)


def divide(num: Number, den: Number) -> Number:
    """num / den, and 0 where den is 0 (a share of no time, the speed of no work)."""
    if not (type(num) is float and type(den) is float) and (is_array(num) or is_array(den)):
        import numpy as np

        num_a, den_a = np.broadcast_arrays(np.asarray(num, float), np.asarray(den, float))
        out = np.zeros(num_a.shape)
        np.divide(num_a, den_a, out=out, where=den_a > 0)
        return out
    return num / den if den > 0 else 0.0


_INF = float("inf")


def _finite(total: Number, workload: str, hw: str) -> None:
    """Refuse a result with a figure a float cannot hold (see the module docstring)."""
    if type(total) is float:
        if total < _INF:
            return
    else:
        import numpy as np

        if np.all(np.isfinite(total)):
            return
    raise WorkloadError(f"workload {brief(workload)} on {hw}: its figures overflow a float "
                        f"(sizes this large describe no real program)")


class _Row:
    """One kernel's figures on the chip while :func:`analyze` works them out (mutable: an
    epilogue's times move to its host; ``time`` and ``regime`` come last)."""

    __slots__ = ("bytes", "count", "flops", "kept", "label", "link_bytes", "name", "peak",
                 "regime", "t_compute", "t_memory", "t_network", "time")
    # floats, or arrays of a sweep: analyze() checks which before it builds a Result
    count: Any
    flops: Any
    bytes: Any
    link_bytes: Any
    t_compute: Any
    t_memory: Any
    t_network: Any
    kept: Any

    def __init__(self, name: str, count: Number, flops: Number, nbytes: Number,
                 link_bytes: Number, peak: float, label: str, t_compute: Number,
                 t_memory: Number, t_network: Number, kept: Number) -> None:
        self.name = name
        self.count = count
        self.flops = flops
        self.bytes = nbytes
        self.link_bytes = link_bytes
        self.peak = peak
        self.label = label
        self.t_compute = t_compute
        self.t_memory = t_memory
        self.t_network = t_network
        self.kept = kept  # bytes kept on chip (not read from memory)
        self.time: Any = 0.0
        self.regime: Any = ""


def _kernel_bounds(kernel: Kernel, hw: Hardware, dtype: str | None, sparse: bool,
                   scale: float, derate: float, capacity: float,
                   onchip_bandwidth: float | None) -> _Row:
    """The kernel's figures and resource times on *hw* (its time and regime to come)."""
    if kernel.link_options and hw.links:  # a collective the fabric may run in the network
        kernel = kernel.on_link(hw.link(kernel.link).algorithms)
    precision = kernel.dtype or dtype
    if kernel.operands and hw.mixed_matmul:
        precision = hw.mixed_path(*kernel.operands) or precision
    try:
        label, peak = hw.peak_key(precision, kernel.unit, sparse and kernel.unit == "matrix")
    except UnsupportedPrecisionError as exc:  # say whose precision it is
        whose = f"dtype={dtype!r}" if kernel.dtype is None else (
            f"kernel {kernel.name!r} (dtype={kernel.dtype!r})")
        raise UnsupportedPrecisionError(f"{whose}: {exc}") from None
    count = kernel.count
    flops = kernel.flops * count * scale
    handed = kernel.handoff_in or type(kernel.handoff_out) is not float or kernel.handoff_out
    kept = kept_on_chip(kernel, capacity) * count if capacity > 0 and handed else 0.0
    nbytes = kernel.bytes * count - kept
    link_bytes = kernel.link_bytes * count
    if not (type(link_bytes) is float and link_bytes == 0.0) and (
            is_array(link_bytes) or link_bytes > 0):
        t_network = link_bytes / (hw.link_bandwidth(kernel.link, kernel.link_count) * derate)
        if kernel.link_steps:  # each step of the collective waits the link's latency
            t_network = t_network + kernel.link_steps * count * hw.link(kernel.link).latency
    else:
        t_network = 0.0
    t_compute = flops / (peak * scale * derate)
    if onchip_bandwidth is None:
        t_memory = nbytes / (hw.memory_bandwidth * derate)
    else:
        t_memory = _memory_time(nbytes, kept, hw.memory_bandwidth, onchip_bandwidth, derate)
    return _Row(kernel.name, count, flops, nbytes, link_bytes, peak * scale, label,
                t_compute, t_memory, t_network, kept)


def _epilogues(kernels: tuple[Kernel, ...], rows: list[_Row]) -> dict[int, list[int]]:
    """Time each host kernel and its epilogue kernels as one (see the module docstring).

    Returns {host index: [epilogue indices]}; an epilogue names the last kernel before it of
    that name. Rows are updated in place: the host's compute time is the larger of the
    group's matrix and vector times, its memory and network times the group's sums; the
    epilogues' times become 0.
    """
    hosts: dict[int, list[int]] = {}
    if len(kernels) < 2:
        return hosts
    last: dict[str, int] = {}
    for i, kernel in enumerate(kernels):
        host = None if kernel.epilogue_of is None else last.get(kernel.epilogue_of)
        if host is None:
            last[kernel.name] = i
        else:
            hosts.setdefault(host, []).append(i)
    for host, members in hosts.items():
        group = (host, *members)
        matrix = add_up(rows[j].t_compute for j in group if kernels[j].unit == "matrix")
        vector = add_up(rows[j].t_compute for j in group if kernels[j].unit == "vector")
        head = rows[host]
        head.t_compute = _max3(matrix, vector, 0.0)
        head.t_memory = add_up(rows[j].t_memory for j in group)
        head.t_network = add_up(rows[j].t_network for j in group)
        head.label = " + ".join(dict.fromkeys(rows[j].label for j in group))
        for j in members:
            rows[j].t_compute = rows[j].t_memory = rows[j].t_network = 0.0
    return hosts


def _memory_time(nbytes: Number, kept: Number, bandwidth: float,
                 onchip_bandwidth: float | None, derate: float) -> Number:
    """Off-chip bytes over the off-chip bandwidth, or all bytes over a published on-chip
    bandwidth, whichever is longer."""
    t_memory = nbytes / (bandwidth * derate)
    if onchip_bandwidth is None:
        return t_memory
    return _max3(t_memory, (nbytes + kept) / (onchip_bandwidth * derate), 0.0)


class Program(NamedTuple):
    """A workload's figures on a chip, floats or numpy arrays alike, as :func:`program`
    works them out: what :func:`analyze` and :func:`pytest_roofline.engine.sweeps.sweep` turn into
    their records."""

    rows: list[_Row]
    hosts: dict[int, list[int]]
    flops: Any
    bytes: Any
    link_bytes: Any
    t_compute: Any
    t_memory: Any
    t_network: Any
    time: Any
    regime: Any
    shares: dict[str, Any]
    ridge_label: str
    ridge_peak: float


def program(workload: Workload, chip: Hardware, dtype: str | None, flops_per_mac: int,
            derate: float, sparse: bool) -> Program:
    """The figures of *workload* on *chip* under checked settings (see the module
    docstring for the rules), scalars or arrays as the workload holds them."""
    scale = flops_per_mac / 2.0
    level = onchip_level(chip)
    capacity = 0.0 if level is None else level.capacity
    rows = [_kernel_bounds(k, chip, dtype, sparse, scale, derate, capacity,
                           None if level is None else level.bandwidth)
            for k in workload.kernels]
    hosts = _epilogues(workload.kernels, rows) if len(rows) > 1 else {}
    for row in rows:
        c, m, n = row.t_compute, row.t_memory, row.t_network
        if type(c) is float and type(m) is float and type(n) is float:  # not a sweep
            row.time = max(c, m, n)  # ties: compute, then memory (as _regime)
            row.regime = "compute" if c >= m and c >= n else (
                "memory" if m >= n else "network")
        else:
            row.time = _max3(c, m, n)
            row.regime = _regime(c, m, n)
    for host, members in hosts.items():
        for j in members:
            rows[j].regime = rows[host].regime  # an epilogue shares its host's regime

    if len(rows) == 1:  # one kernel: its figures are the program's
        row = rows[0]
        flops, nbytes, link_bytes = row.flops, row.bytes, row.link_bytes
        t_compute, t_memory, t_network = row.t_compute, row.t_memory, row.t_network
        time, regime = row.time, row.regime
        shares = _shares(rows, time)
    else:
        flops = add_up(row.flops for row in rows)
        nbytes = add_up(row.bytes for row in rows)
        link_bytes = add_up(row.link_bytes for row in rows)
        time = add_up(row.time for row in rows)
        t_compute = add_up(row.t_compute for row in rows)
        t_memory = add_up(row.t_memory for row in rows)
        t_network = add_up(row.t_network for row in rows)
        shares = _shares(rows, time)
        regime = _regime(shares["compute"], shares["memory"], shares["network"])

    # the precision the matrix work is priced in: its kernels' own, the analysis's dtype only
    # for kernels that name none, so that the ridge and the times never disagree
    main, unit = _main_dtype(workload, dtype)
    if main is not None and dtype is not None:
        try:  # a dtype no kernel takes is still checked
            chip.peak_key(dtype, "matrix", sparse)
        except UnsupportedPrecisionError as exc:
            raise UnsupportedPrecisionError(f"dtype={dtype!r}: {exc}") from None
    ridge_label, ridge_peak = chip.peak_key(dtype if main is None else main, unit,
                                            sparse and unit == "matrix")
    # every figure is >= 0 and each resource's time is at most the total time, so this one
    # sum is finite exactly when every figure of the result is
    _finite(flops + nbytes + link_bytes + time, workload.name, chip.name)
    return Program._make((rows, hosts, flops, nbytes, link_bytes, t_compute, t_memory,
                          t_network, time, regime, shares, ridge_label, ridge_peak * scale))


def latency_notes(kernels: tuple[Kernel, ...], chip: Hardware) -> tuple[str, ...]:
    """A note for each link whose measured per-step latency prices a collective: a measured
    figure includes software overhead, so the network time is no physical minimum."""
    notes: list[str] = []
    for kernel in kernels:
        if not kernel.link_steps:
            continue
        link = chip.link(kernel.link)
        if link.latency_kind == "measured" and link.latency > 0:
            note = (f"{link.name} latency {link.latency * 1e6:g} us a step is measured, not a "
                    f"physical minimum: the network time is no lower bound")
            if note not in notes:
                notes.append(note)
    return tuple(notes)


def _shares(rows: list[_Row], time: Number) -> dict[str, Number]:
    """Seconds of the program each resource bounds (each kernel counts for its regime)."""
    if len(rows) == 1 and type(rows[0].regime) is str:  # one kernel, not a sweep
        shares: dict[str, Number] = {"compute": 0.0, "memory": 0.0, "network": 0.0}
        shares[rows[0].regime] = 0.0 + rows[0].time
        return shares
    shares = {name: 0.0 for name in REGIMES}
    for row in rows:
        k_time, k_regime = row.time, row.regime
        if is_array(k_regime):
            import numpy as np

            for name in REGIMES:
                shares[name] = shares[name] + np.where(k_regime == name, k_time, 0.0)
        else:
            shares[k_regime] = shares[k_regime] + k_time
    return shares


def _main_dtype(workload: Workload, dtype: str | None) -> tuple[str | None, str]:
    """The precision and unit the ridge is taken at: the matrix kernel's with the most FLOPs;
    in a program of vector work only, the vector kernel's with the most FLOPs (*dtype* for
    a kernel that names none); (None, "matrix"), the chip's default, for work of no FLOPs."""
    kernels = workload.kernels
    if len(kernels) == 1 and kernels[0].unit == "matrix":  # one matrix kernel: its own
        return kernels[0].dtype, "matrix"
    best: tuple[float, str | None] = (-1.0, None)
    vector: tuple[float, str | None] = (0.0, None)
    for kernel in kernels:
        if kernel.unit == "matrix" and kernel.dtype is None:
            continue
        flops = kernel.total_flops
        weight = float(flops.max()) if is_array(flops) else float(flops)  # type: ignore[union-attr]
        if kernel.unit == "matrix":
            if weight > best[0]:
                best = (weight, kernel.dtype)
        elif weight > vector[0] and (kernel.dtype or dtype) is not None:
            vector = (weight, kernel.dtype or dtype)
    if best[1] is None and vector[1] is not None and not any(
            k.unit == "matrix" for k in workload.kernels):
        return vector[1], "vector"
    return best[1], "matrix"
