"""``profile TRACE``: a PyTorch or ``jax.profiler`` trace priced per kernel on the chip
that ran it.

Exit codes: 0 when the trace was read and priced and no gate asked for failed (without a gate
the command reports, whatever it finds, kernels faster than their bound included); 1 when a
gate failed: a kernel below ``--min-kernel-efficiency``, or a kernel faster than its bound
under ``--min-kernel-efficiency`` or ``--fail-faster`` (unless ``--allow-faster``); 2 for a
bad command line or a trace that cannot be read.
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import EXIT_OK, EXIT_REGRESSION, echo, positive, print_json

EXIT_CODES = ("exit codes: 0 priced, and no gate asked for failed (without a gate, whatever "
              "the trace holds); 1 a gate failed: a kernel below --min-kernel-efficiency, "
              "or one faster than its bound under --min-kernel-efficiency or --fail-faster "
              "(unless --allow-faster); 2 usage error or a trace that cannot be read")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``profile`` to the subcommands *sub* (an ``add_subparsers()`` result)."""
    parser = sub.add_parser(
        "profile", parents=[common],
        help="price a PyTorch or jax.profiler trace per kernel: measured time against its "
             "bound",
        description="Read a PyTorch profiler trace (prof.export_chrome_trace(), .json or "
        ".json.gz, recorded with record_shapes=True) from any machine; price each op from its "
        "recorded input shapes and dtypes with the tracer's op table; join every GPU kernel "
        "to the op that launched it; judge each call against its bound; list the kernels "
        "that lose the most time against their roofline bound, and what could not be priced "
        "with its share of the time. The chip is the trace's own (deviceProperties) unless "
        "--hw names one. A jax.profiler trace (the directory jax.profiler.trace wrote, or its "
        ".xplane.pb) is priced per executed XLA op or fusion, from the compiled HLO the trace "
        "holds, on the device it names.", epilog=EXIT_CODES)
    parser.add_argument("trace", help="the trace file (.json or .json.gz; a jax.profiler "
                                      "directory or .xplane.pb)")
    parser.add_argument("--hw", help="the chip that ran it (default: from the trace)")
    parser.add_argument("--capture", metavar="TRACE",
                        help="a trace of the capture of the CUDA/HIP graphs the trace "
                             "replays (or a folder of them): each replay is priced by the "
                             "capture with its number of kernels")
    parser.add_argument("--top", type=positive, default=10,
                        help="how many kernels and unpriced ops the text lists (default 10; "
                             "--json holds every row)")
    parser.add_argument("--max-bytes", type=positive, default=None, metavar="BYTES",
                        help="refuse a trace larger than this, on disk or inflated "
                             "(default 1073741824, 1 GiB)")
    parser.add_argument("--min-kernel-efficiency", metavar="FRACTION",
                        help="exit 1 when a priced kernel runs below this fraction of its "
                             "roof (0.3 or 30%%), or when one beats its bound")
    parser.add_argument("--fail-faster", action="store_true",
                        help="exit 1 when a kernel beats its bound, without an efficiency "
                             "gate")
    parser.add_argument("--allow-faster", action="store_true",
                        help="a kernel faster than its bound is reported, never a failure")
    parser.set_defaults(func=cmd_profile)


def cmd_profile(args: argparse.Namespace) -> int:
    from ..profiling import read_trace
    from ..profiling.rules import parse_minimum

    minimum = None if args.min_kernel_efficiency is None else parse_minimum(
        args.min_kernel_efficiency, "--min-kernel-efficiency")
    result = read_trace(args.trace, hw=args.hw, capture=args.capture,
                        max_bytes=args.max_bytes)
    gated = minimum is not None or args.fail_faster
    failures = result.check(minimum if minimum is not None else {},
                            allow_faster=args.allow_faster) if gated else []
    if args.json:
        print_json({**result.to_dict(), "failures": failures})
    else:
        echo(result.table(top=args.top))
        for line in failures[: args.top]:
            echo(f"FAIL: {line}")
        if len(failures) > args.top:
            echo(f"FAIL: {len(failures) - args.top} more (--json lists every one)")
    return EXIT_REGRESSION if failures else EXIT_OK
