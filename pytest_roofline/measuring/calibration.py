"""A calibration as a hardware spec: measured, written in the built-in schema, cached.

``hw="host"`` (the CPU) and ``hw="cuda:0"`` (a GPU, through torch) name calibrations. The
first lookup on a machine measures it (a progress line on stderr; a few seconds) and writes
the spec to the user's cache folder, ``$XDG_CACHE_HOME/pytest-roofline/`` (default
``~/.cache/pytest-roofline/``), under a key of the machine (node, CPU model, cores) and the
software that ran the kernels (numpy's BLAS, torch). Later lookups read the file.
``pytest-roofline calibrate`` measures again and replaces it.

The spec file is an ordinary hardware spec (``specs/hardware/README.md``) whose source is the
calibration itself, plus a ``provenance`` section: CPU/GPU model, cores, BLAS and version,
driver, date, rounds, every sample and its spread. Concurrent first lookups (pytest-xdist
workers) take a file lock, so one process measures while the others wait for its file:
two calibrations running at once would halve each other's figures.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..atomic import encodable, why_not_written, write_text
from ..errors import RooflineError
from ..hardware import from_dict
from ..specfiles import load_yaml
from ..text_table import wrap_line
from ..units import si
from . import ceilings, probe
from .cpu import QUICK, Plan, Roofs, calibrate_cpu
from .gpu import calibrate_gpu

if TYPE_CHECKING:
    from ..hardware import Hardware

_DEVICE = re.compile(r"^(host|cpu|cuda(?:[:-](\d+))?)$")
#: Names the catalog resolves through :func:`resolve` (see ``hardware.RESOLVERS``).
NAMES = r"host|cuda(?:[:-]\d+)?"

Progress = Callable[[str], None]


def stderr_progress(text: str) -> None:
    """A progress line on stderr, wrapped to the terminal's columns (``COLUMNS``, else the
    terminal's, else 80), a character stderr cannot hold escaped."""
    lines = wrap_line(f"pytest-roofline: {text}", shutil.get_terminal_size().columns, hang=4)
    print(encodable("\n".join(lines), sys.stderr.encoding or "utf-8"), file=sys.stderr,
          flush=True)


#: Where progress lines go; the pytest plugin points it at the terminal.
progress: Progress = stderr_progress


def parse_device(text: str) -> tuple[str, str]:
    """``"cpu"``/``"host"`` -> ``("cpu", "host")``; ``"cuda:1"`` -> ``("cuda:1", "cuda-1")``."""
    match = _DEVICE.match(str(text).strip().lower())
    if not match:
        raise RooflineError(f"device {text!r} is not one to calibrate; allowed: cpu (or "
                            f"host), cuda, cuda:N")
    if match.group(1) in ("host", "cpu"):
        return "cpu", "host"
    index = int(match.group(2) or 0)
    return f"cuda:{index}", f"cuda-{index}"


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/pytest-roofline``, else ``~/.cache/pytest-roofline``; a
    RooflineError saying what to set when neither names a folder (no ``XDG_CACHE_HOME``, no
    ``HOME`` and no home in the user database)."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if os.path.isabs(base):
        return Path(base) / "pytest-roofline"
    try:
        # HOME set but empty names no folder (Path.home() reads it as "/"): the user
        # database's home, as if HOME were unset
        home = Path.home() if os.environ.get("HOME", None) != "" else _database_home()
    except (RuntimeError, KeyError, OSError):
        home = Path("~")
    if not home.is_absolute() and os.environ.get("HOME"):
        raise RooflineError(f"no folder for the calibration cache: HOME="
                            f"{os.environ['HOME']!r} is not an absolute path; set HOME, or "
                            f"XDG_CACHE_HOME, to a writable folder's absolute path")
    if not home.is_absolute():
        raise RooflineError("no folder for the calibration cache: XDG_CACHE_HOME and HOME are "
                            "unset and the user has no home folder; set XDG_CACHE_HOME to a "
                            "writable folder")
    return home / ".cache" / "pytest-roofline"


def _database_home() -> Path:
    """The user's home in the user database (``pwd``), or ``~`` where it names none."""
    try:
        import pwd

        folder = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, OSError, AttributeError):
        return Path("~")
    return Path(folder) if folder and folder != "/" else Path("~")


def unwritable(path: Path, exc: OSError) -> RooflineError:
    """The one-line error of a calibration cache that cannot be written."""
    return RooflineError(f"the calibration cache {path.parent} cannot be written "
                         f"({why_not_written(exc, path)}): set XDG_CACHE_HOME to a writable "
                         f"folder, or name a file of `pytest-roofline calibrate -o F`")


def software_key(device: str) -> str:
    """What else the figures depend on: numpy's BLAS for the CPU, torch for a GPU."""
    if device == "cpu":
        blas = probe.blas()
        return f"numpy {blas.get('numpy')} {blas.get('name', '')} {blas.get('version', '')}"
    try:
        import torch  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return "no torch"
    return f"torch {torch.__version__}"


def cache_path(device: str = "cpu") -> Path:
    """The cached spec of *device* on this machine."""
    device, name = parse_device(device)
    return cache_dir() / f"{name}-{probe.machine_key(software_key(device))}.yaml"


def _q(value: float, unit: str) -> str:
    return f"{value:.6g} {unit}"


def to_spec(roofs: Roofs, *, name: str, facts: Mapping[str, Any]) -> dict[str, Any]:
    """The hardware spec mapping of a calibration (the built-in schema plus provenance)."""
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    bandwidth = roofs.bandwidth
    by_threads = roofs.bandwidth_by_threads()
    model = str(facts.get("model", "unknown"))
    source = (f"measured on {platform.node() or 'this machine'} by pytest-roofline calibrate "
              f"on {when}: best of {roofs.rounds} samples per figure (see provenance)")
    spec: dict[str, Any] = {
        "name": name,
        "aliases": [name.replace("cuda-", "cuda:")] + (["cuda"] if name == "cuda-0" else []),
        "vendor": str(facts.get("vendor", "")),
        "description": f"{model}, calibrated ({facts.get('cores_label', '')})".replace(" ()", ""),
        "default_dtype": str(facts.get("default_dtype", "fp32")),
        "vector_fallback": "matrix",
        "sources": {"calibration": source},
        "memory": {"capacity": _q(float(facts["capacity"]), "B"),
                   "bandwidth": _q(bandwidth.value, "B/s"),
                   **({"by_threads": {n: _q(f.value, "B/s") for n, f in by_threads.items()}}
                      if by_threads else {}),
                   "source": "calibration", "note": bandwidth.detail},
        "matrix": {**{k: _q(f.value, "FLOP/s") for k, f in roofs.matrix.items()},
                   "source": "calibration"},
        "provenance": {
            "date": when, "device": facts.get("device"), "model": model,
            "cores": roofs.threads, "rounds": roofs.rounds, "load_average": roofs.load,
            "conditions": roofs.conditions(),
            "seconds": round(roofs.seconds, 2),
            **{k: v for k, v in facts.items()
               if k in ("blas", "driver", "torch", "cuda", "python", "platform")},
            "figures": {
                **{f"matrix.{k}": f.to_dict() for k, f in roofs.matrix.items()},
                **{f"memory.{k}": f.to_dict() for k, f in roofs.memory.items()},
                **{f"cache.{lv.name}": lv.bandwidth.to_dict() for lv in roofs.levels},
            },
            "sweep": [[working_set, float(f"{figure.value:.6g}")]
                      for working_set, figure in roofs.sweep],
            "warnings": roofs.warnings(),
        },
    }
    if name == "host":
        spec["aliases"] = []
    if roofs.levels:
        spec["onchip"] = [{"name": lv.name, "capacity": _q(lv.capacity, "B"),
                           "bandwidth": _q(lv.bandwidth.value, "B/s"), "source": "calibration",
                           "note": lv.bandwidth.detail} for lv in roofs.levels]
    elif float(facts.get("l2_cache") or 0) > 0:  # a GPU: the L2 size the driver reports
        spec["onchip"] = [{"name": "l2", "capacity": _q(float(facts["l2_cache"]), "B"),
                           "source": "calibration", "note": "as torch reports it"}]
    if facts.get("clock"):
        spec["clock"] = {"boost": _q(float(facts["clock"]), "Hz"), "source": "calibration",
                         "note": "as the OS reports it"}
    return spec


def calibrate(device: str = "cpu", *, quick: bool = False,
              say: Progress | None = None) -> tuple[dict[str, Any], list[str]]:
    """Measure *device* ("cpu", "cuda:N"); returns its spec mapping and any warnings.

    *quick* takes fewer, smaller samples (for tests; figures are rougher).
    """
    device, name = parse_device(device)
    plan: Plan = QUICK if quick else Plan()
    facts: dict[str, Any] = {"device": device, "python": platform.python_version(),
                             "platform": platform.platform()}
    if device == "cpu":
        roofs = calibrate_cpu(plan, say)
        cores = probe.cores()
        cpuinfo = probe.cpu_model()
        facts.update(model=cpuinfo, capacity=probe.memory_capacity(), clock=probe.clock(),
                     blas=probe.blas(), default_dtype="fp64",
                     cores_label=f"{cores} core{'s' if cores != 1 else ''}",
                     vendor=cpuinfo.split()[0] if cpuinfo else "")
    else:
        roofs, gpu = calibrate_gpu(int(device.split(":")[1]), plan, say)
        facts.update(gpu, vendor="NVIDIA",
                     default_dtype="bf16" if "bf16" in roofs.matrix else "fp32",
                     cores_label=f"{gpu['multiprocessors']} SMs")
    spec = to_spec(roofs, name=name, facts=facts)
    spec["provenance"]["conditions"]["quick"] = quick  # a re-check recalibrates alike
    spec["provenance"]["limits"] = limits_of(device, facts)
    return spec, roofs.warnings()


def limits_of(device: str, facts: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The physical limits a calibration keeps beside its timed roofs (``provenance.limits``,
    read by :mod:`pytest_roofline.engine.limits`): the host's theoretical peaks and
    last-level cache (:mod:`.ceilings`); a GPU's L2 as its driver reports it."""
    if device == "cpu":
        return ceilings.host_limits()
    l2 = float((facts or {}).get("l2_cache") or 0)
    return {"llc_B": l2, "note": "L2 as the driver reports it"} if l2 > 0 else {}


def save(path: str | os.PathLike[str], spec: Mapping[str, Any]) -> Path:
    """Write *spec* as YAML: a temporary file in the same folder, then a rename."""
    import yaml

    text = ("# A hardware spec measured by `pytest-roofline calibrate` "
            "(schema: specs/hardware/README.md).\n"
            + yaml.safe_dump(dict(spec), sort_keys=False, width=100))
    return write_text(path, text)


def _provenance(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """A spec's ``provenance`` section, or an empty one where it has none or it is not a
    mapping (a hand-edited file): what it does not say is unknown, never a crash."""
    value = spec.get("provenance")
    return value if isinstance(value, Mapping) else {}


#: Bytes written to probe the cache folder: more than a calibrated spec holds (~10 kB).
_PROBE_BYTES = 1 << 16


def writable(device: str) -> Path:
    """The cached spec's path of *device*, once its folder is known to take a file: the
    one-line error of :func:`unwritable` comes before any measuring, not after it."""
    import tempfile

    path = cache_path(device)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".probe-") as probe_file:
            # as large as a spec gets: a full disk or a file-size limit is said now too
            probe_file.write(b"\0" * _PROBE_BYTES)
            probe_file.flush()
    except OSError as exc:
        raise unwritable(path, exc) from None
    return path


def quiet(spec: Mapping[str, Any]) -> bool | None:
    """Whether a calibration spec was measured on a quiet machine (None: it does not say)."""
    conditions = _provenance(spec).get("conditions") or {}
    value = conditions.get("quiet") if isinstance(conditions, Mapping) else None
    return value if isinstance(value, bool) else None


#: A new calibration whose roof reads this much below the cached one's is not taken
#: silently: twice the repeatability of a calibration on a quiet machine.
LOWER = 0.10


def store(device: str, spec: Mapping[str, Any], *, replace: bool = False
          ) -> tuple[Path, str | None]:
    """Cache *spec* as the calibration of *device*, unless (without *replace*):

    * it is a quick calibration and the cached one a full one: a quick one never replaces a
      full one (its fewer, smaller samples read lower on a shared machine);
    * it was taken under load and the cached one on a quiet machine: figures measured under
      load are lower than the machine's, and agreeing with each other does not make them
      right;
    * any of its roofs (a peak, a bandwidth) reads more than :data:`LOWER` below the cached
      one's: a roof is the highest rate the machine reaches, so a lower figure was measured
      while something else ran, and taking it would make every later efficiency read high.

    Returns the cached file and, when the new spec was not cached, a sentence saying why."""
    path = cache_path(device)
    if replace or not path.is_file():
        return _saved(path, spec), None
    try:
        cached = load_yaml(path)
    except RooflineError:
        return _saved(path, spec), None
    if not isinstance(cached, Mapping):
        return _saved(path, spec), None
    when = _provenance(cached).get("date", "an earlier date")
    if _quick(spec) and _quick(cached) is False:
        return path, (f"kept the full calibration of {when} in {path}: a quick calibration "
                      f"never replaces a full one (calibrate without --quick, or pass "
                      f"--replace)")
    if quiet(spec) is False and quiet(cached):
        return path, (f"kept the quiet calibration of {when} in {path}: this one was "
                      f"taken under load and does not replace it")
    lower = _lower(spec, cached)
    if lower:
        return path, (f"kept the calibration of {when} in {path}: this one reads lower "
                      f"({'; '.join(lower)}), which means something else ran meanwhile: a "
                      f"roof is the highest rate the machine reaches. Calibrate again on a "
                      f"quiet machine, or pass --replace to take it anyway")
    return _saved(path, spec), None


def _saved(path: Path, spec: Mapping[str, Any]) -> Path:
    """:func:`save`, or the one-line error of a cache that cannot be written."""
    try:
        return save(path, spec)
    except OSError as exc:
        raise unwritable(path, exc) from None


def _quick(spec: Mapping[str, Any]) -> bool | None:
    conditions = _provenance(spec).get("conditions") or {}
    value = conditions.get("quick") if isinstance(conditions, Mapping) else None
    return value if isinstance(value, bool) else None


def _figures(spec: Mapping[str, Any]) -> dict[str, float]:
    figures = _provenance(spec).get("figures") or {}
    out: dict[str, float] = {}
    if isinstance(figures, Mapping):
        for key, figure in figures.items():
            value = figure.get("value") if isinstance(figure, Mapping) else None
            if isinstance(value, (int, float)) and value > 0 and not key.startswith("cache."):
                out[str(key)] = float(value)
    return out


def _lower(spec: Mapping[str, Any], cached: Mapping[str, Any]) -> list[str]:
    """The roofs of *spec* more than LOWER below *cached*'s, as ``matrix.fp64 21.6 < 104
    GFLOP/s``."""
    new, old = _figures(spec), _figures(cached)
    out = []
    for key, value in new.items():
        before = old.get(key)
        if before is not None and value < before * (1 - LOWER):
            unit = "FLOP/s" if key.startswith("matrix.") else "B/s"
            out.append(f"{key} {si(value, unit)} < {si(before, unit)}")
    return out


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock beside *path* (POSIX); elsewhere no lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path.with_suffix(".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def load(device: str = "cpu", *, calibrate_missing: bool = True,
         quick: bool = False) -> Hardware:
    """The calibrated chip of *device*: the cached spec, or a new calibration (saved)."""
    device, name = parse_device(device)
    path = cache_path(device)
    if not path.is_file():
        if not calibrate_missing:
            raise RooflineError(f"{name} is not calibrated on this machine (no {path}); run "
                                f"pytest-roofline calibrate --device {device}")
        if device != "cpu":  # no such GPU: said before a lock file or a word of calibrating
            from .gpu import torch_device

            torch_device(int(device.split(":")[1]))
        try:
            with locked(path):
                if not path.is_file():  # another process may have written it meanwhile
                    started = time.perf_counter()
                    progress(f"calibrating {name} ({device}) on first use; cached in {path} "
                             f"...")
                    spec, warnings = calibrate(device, quick=quick)
                    save(path, spec)
                    for line in warnings:
                        progress(f"warning: {line}")
                    progress(f"calibrated {name} in {time.perf_counter() - started:.1f} s")
        except OSError as exc:  # checked before measuring: the lock file is written first
            raise unwritable(path, exc) from None
    try:
        spec = load_yaml(path)
        if device == "cpu" and isinstance(spec, dict) and isinstance(
                spec.get("provenance"), dict) and "limits" not in spec["provenance"]:
            # a calibration saved before the limits were kept: this machine's, read now
            spec["provenance"]["limits"] = limits_of(device)
        return from_dict(spec, str(path))
    except RooflineError as exc:
        raise RooflineError(f"{exc} (a damaged calibration: run pytest-roofline calibrate "
                            f"--device {device} to measure again)") from None


def resolve(name: str) -> Hardware | None:
    """The catalog's hook: the calibrated chip for ``host``/``cuda[:N]``, else None."""
    if not _DEVICE.match(name.strip().lower()) or name.strip().lower() == "cpu":
        return None
    return load(name)
