"""``calibrate``: measure this machine's roofs into a hardware spec (``host``, ``cuda:N``)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .common import EXIT_OK, echo, print_json, render_table


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
    from ..units import si

    device, name = calibration.parse_device(args.device)
    started = time.perf_counter()

    def say(text: str) -> None:
        if not args.json:
            from ..text_table import wrap_line
            from .common import terminal_width

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
    figures = spec["provenance"]["figures"]
    rows = []
    for key, figure in figures.items():
        unit = "FLOP/s" if key.startswith("matrix.") else "B/s"
        rows.append([key, si(float(figure["value"]), unit), f"{figure['spread']:.0%}",
                     str(figure.get("detail", ""))])
    echo(f"{name}: {spec['description']}")
    echo(render_table(["figure", "best", "spread", "how"], rows, align="lrrl"))
    memory = spec["memory"]
    echo(f"\nmemory roof: {memory['bandwidth']} ({memory['note']}); "
         f"peaks: {', '.join(f'{k} {v}' for k, v in spec['matrix'].items() if k != 'source')}")
    for line in warnings:
        echo(f"warning: {line}")
    echo(f"\ncalibrated in {seconds:.1f} s; spec written to {', '.join(written) or 'no file'}")
    return EXIT_OK
