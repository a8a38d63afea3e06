"""``profile TRACE``: a PyTorch profiler trace priced per kernel on the chip that ran it."""

from __future__ import annotations

import argparse
from typing import Any

from .common import EXIT_OK, EXIT_REGRESSION, echo, positive, print_json


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``profile`` to the subcommands *sub* (an ``add_subparsers()`` result)."""
    parser = sub.add_parser(
        "profile", parents=[common],
        help="price a PyTorch profiler trace per kernel: measured time against its bound",
        description="Read a PyTorch profiler trace (prof.export_chrome_trace(), .json or "
        ".json.gz, recorded with record_shapes=True) from any machine; price each op from its "
        "recorded input shapes and dtypes with the tracer's op table; join every GPU kernel "
        "to the op that launched it; list the kernels that lose the most time against their "
        "roofline bound, and what could not be priced with its share of the time. The chip "
        "is the trace's own (deviceProperties) unless --hw names one.")
    parser.add_argument("trace", help="the trace file (.json or .json.gz)")
    parser.add_argument("--hw", help="the chip that ran it (default: from the trace)")
    parser.add_argument("--top", type=positive, default=10,
                        help="how many kernels and unpriced ops to list (default 10)")
    parser.add_argument("--max-bytes", type=positive, default=None, metavar="BYTES",
                        help="refuse a trace larger than this, on disk or inflated "
                             "(default 1073741824, 1 GiB)")
    parser.add_argument("--min-kernel-efficiency", metavar="FRACTION",
                        help="exit 1 when a priced kernel runs below this fraction of its "
                             "roof (0.3 or 30%%), or when one beats its bound")
    parser.set_defaults(func=cmd_profile)


def cmd_profile(args: argparse.Namespace) -> int:
    from ..profiling import read_trace
    from ..profiling.rules import parse_minimum

    minimum = None if args.min_kernel_efficiency is None else parse_minimum(
        args.min_kernel_efficiency, "--min-kernel-efficiency")
    result = read_trace(args.trace, hw=args.hw, max_bytes=args.max_bytes)
    failures = result.check(minimum if minimum is not None else {}) if (
        minimum is not None or result.faster) else []
    if args.json:
        print_json({**result.to_dict(args.top), "failures": failures})
    else:
        echo(result.table(top=args.top))
        for line in failures[: args.top]:
            echo(f"FAIL: {line}")
    return EXIT_REGRESSION if failures else EXIT_OK
