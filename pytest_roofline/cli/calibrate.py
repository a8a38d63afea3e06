"""``calibrate``: measure this machine's roofs into a hardware spec (``host``, ``cuda:N``)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import RooflineError
from ..text_table import wrap_line
from ..units import si
from .common import EXIT_OK, echo, print_json, render_table, terminal_width


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``calibrate`` to the subcommands *sub* (an ``add_subparsers()`` result)."""
    parser = sub.add_parser(
        "calibrate", parents=[common],
        help="measure this machine's peaks, bandwidth and caches into a spec (host, cuda:N)",
        description="Measure peak FLOP/s per precision (BLAS GEMM through numpy on a CPU, "
        "torch GEMM on a GPU), memory bandwidth (STREAM copy/add/triad past the last-level "
        "cache; device copy and memset on a GPU) and the cache levels, best of several "
        "samples spread over time. The spec is cached per machine in the user's cache folder "
        "($XDG_CACHE_HOME/pytest-roofline) and used by hw=\"host\" / hw=\"cuda:0\".")
    parser.add_argument("--device", default="cpu",
                        help="cpu (the default; the spec is named host), cuda or cuda:N")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="also write the spec to FILE (a YAML hardware spec)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer, smaller samples: seconds less, rougher figures (never "
                             "replaces a full calibration in the cache)")
    parser.add_argument("--replace", action="store_true",
                        help="cache this calibration even where a roof reads lower than the "
                             "cached one's, or a quick one replaces a full one")
    parser.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from ..measuring import calibration

    device, name = calibration.parse_device(args.device)
    calibration.writable(device)  # a cache that cannot be written is said before measuring
    if args.output:
        _check_output(args.output)
    started = time.perf_counter()

    def say(text: str) -> None:
        if not args.json:
            print("\n".join(wrap_line(f"calibrating {name}: {text}", terminal_width(), hang=4)),
                  file=sys.stderr, flush=True)

    spec, warnings = calibration.calibrate(device, quick=args.quick, say=say)
    path, kept = calibration.store(device, spec, replace=args.replace)
    written = [] if kept else [str(path)]
    if kept:
        warnings = [*warnings, kept]
    if args.output:
        written.append(str(calibration.save(args.output, spec)))
    seconds = time.perf_counter() - started
    if args.json:
        print_json({"spec": spec, "files": written, "warnings": warnings,
                    "seconds": seconds})
        return EXIT_OK
    echo(f"{name}: {spec['description']}")
    echo(render_table(["figure", "best", "spread", "how"], figure_rows(spec), align="lrrl"))
    if not settled(spec):
        echo("* did not settle: see the warning below")
    memory = spec["memory"]
    peaks = ", ".join(f"{k} {rate(v, 'FLOP/s')}" for k, v in spec["matrix"].items()
                      if k != "source")
    echo(f"\nmemory roof: {rate(memory['bandwidth'], 'B/s')} ({memory['note']}); "
         f"peaks: {peaks}")
    for line in warnings:
        echo(f"warning: {line}")
    where = (f"spec written to {', '.join(written)}" if written else
             "spec not written: the cache keeps its calibration (see the warning above)")
    echo(f"\ncalibrated in {seconds:.1f} s; {where}")
    return EXIT_OK


def figure_rows(spec: dict[str, Any]) -> list[list[str]]:
    """The table's rows: each figure, its best rate, its samples' spread (to a tenth of a
    percent: a spread under 0.5% is not 0), marked ``*`` where it did not settle."""
    provenance = spec["provenance"]
    unsettled = set((provenance.get("conditions") or {}).get("unsettled") or ())
    rows = []
    for key, figure in provenance["figures"].items():
        unit = "FLOP/s" if key.startswith("matrix.") else "B/s"
        mark = " *" if key.split(".", 1)[-1] in unsettled else ""
        rows.append([key, si(float(figure["value"]), unit), f"{figure['spread']:.1%}{mark}",
                     str(figure.get("detail", ""))])
    return rows


def settled(spec: dict[str, Any]) -> bool:
    return not (spec["provenance"].get("conditions") or {}).get("unsettled")


def rate(text: str, unit: str) -> str:
    """A spec's rate (``7.94001e+09 B/s``) as the tables print one (``7.94 GB/s``)."""
    from ..units import parse, si

    return si(parse(text, "flop_rate" if unit == "FLOP/s" else "bandwidth", what=unit), unit)


def _check_output(output: str) -> None:
    """An ``-o`` file whose folder is missing or not writable, said before measuring."""
    folder = Path(output).resolve().parent
    if not folder.is_dir():
        raise RooflineError(f"calibrate -o {output!r}: the folder {str(folder)!r} does not "
                            f"exist")
    if not os.access(folder, os.W_OK):
        raise RooflineError(f"calibrate -o {output!r}: the folder {str(folder)!r} cannot be "
                            f"written")
