"""The ``pytest-roofline`` command (also ``python -m pytest_roofline``).

Subcommands::

    hw list | hw show NAME                 the chips: peaks per precision, bandwidths, ridges
    analyze OP [--ARG VALUE ...] --hw ...  an op of pytest_roofline.ops on one or more chips
    analyze model NAME --phase P [...]     a model phase, with a per-kernel breakdown
    sweep OP|model NAME --param P --range LO:HI [...]   where the regime changes
    compare BASE NEW... [--fail RULE ...]  the baseline gate of the plugin, from two reports
    plot REPORT... [-o chart.png|chart.svg]  a roofline chart (characters when no file given)
    markdown REPORT... [--compare BASE]    the Markdown summary
    merge REPORT... -o PATH                the reports of CI shards joined into one
    baselines                              the baselines saved in the storage folder
    calibrate [--device cpu|cuda[:N]] [-o FILE]   measure this machine's roofs (hw="host")
    plan MODEL --hw CHIP --chips N [--ttft T] [--tpot T]   serving configurations, best first
    profile TRACE [--hw CHIP] [--top N]    a PyTorch or JAX trace priced per kernel

Several reports where REPORT... or NEW... is written (the reports of CI shards) are merged
first, as ``merge`` does. Human output by default, ``--json`` for machines. Exit codes: 0
success, 1 regressions found (``compare``), 2 a usage or input error (bad option or rule,
unknown chip, op or model, a missing or corrupt report): one line on stderr, no traceback.

The options of an op are built from its function's signature (``ops.matmul(m, k, n, *,
dtype)`` gives ``--m --k --n --dtype``), so every op is reachable without a table to keep
in step; ``pytest-roofline analyze OP --help`` lists them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import RooflineError
from ..version import __version__
from .analyze import cmd_analyze, cmd_sweep
from .calibrate import add_parser as add_calibrate
from .common import (
    EXIT_USAGE,
    PROG,
    Parser,
    add_rule_option,
    add_storage_option,
    common_options,
    fit_to,
    one_line,
    register_specs,
    width_of,
)
from .hw import cmd_hw_list, cmd_hw_show
from .plan import add_parser as add_plan
from .profile import add_parser as add_profile
from .reports import cmd_baselines, cmd_compare, cmd_markdown, cmd_merge, cmd_plot

# -- the parser ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = common_options()
    parser = Parser(
        prog=PROG, description="Roofline verdicts from the command line: chips, ops and "
        "models, sweeps, and the baseline gate for CI.",
        epilog="exit codes: 0 success, 1 regressions found (compare), 2 usage or input error")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    hw = sub.add_parser("hw", help="list the chips, or show one")
    hw.set_defaults(func=lambda _args: _usage_of(hw))
    hw_sub = hw.add_subparsers(dest="hw_command", metavar="list|show")
    hw_sub.add_parser("list", parents=[common], help="every known chip").set_defaults(
        func=cmd_hw_list)
    show = hw_sub.add_parser("show", parents=[common], help="one chip's figures and sources")
    show.add_argument("name", help="chip name, alias or spec file")
    show.set_defaults(func=cmd_hw_show)

    sub.add_parser("analyze", help="an op or a model phase on chips (analyze OP --help)",
                   add_help=False)
    sub.add_parser("sweep", help="sweep a parameter; where does the regime change?",
                   add_help=False)

    cmp_ = sub.add_parser("compare", parents=[common],
                          help="compare a report with a baseline; exit 1 on regressions")
    cmp_.add_argument("base", help="baseline: a report path, or a name in the storage folder")
    cmp_.add_argument("new", nargs="+",
                      help="the new report: a path, or a name in the storage folder; several "
                           "(the reports of CI shards) are merged first")
    add_rule_option(cmp_, "--fail", "--compare-fail")
    add_storage_option(cmp_)
    cmp_.add_argument("--md", metavar="PATH", help="also write the Markdown summary to PATH")
    cmp_.add_argument("--github-summary", action="store_true",
                      help="also append the Markdown summary to $GITHUB_STEP_SUMMARY")
    cmp_.add_argument("--csv", metavar="PATH",
                      help="write every result old against new as CSV to PATH ('-': stdout, "
                           "instead of the table)")
    cmp_.set_defaults(func=cmd_compare)

    plot = sub.add_parser("plot", parents=[common], help="draw a report's roofline chart")
    plot.add_argument("report", nargs="+",
                      help="a report path, or a baseline name; several (CI shards) are merged")
    plot.add_argument("-o", "--output", metavar="PATH",
                      help="chart.png, chart.svg or chart.pdf (needs the plot extra); "
                           "'term' or none: characters on the terminal")
    plot.add_argument("--title", help="a title over the figure")
    plot.add_argument("--width", type=int, default=None,
                      help="terminal chart columns (default: what fits the terminal, at most "
                           "72)")
    plot.add_argument("--height", type=int, default=20, help="terminal chart rows")
    _compare_options(plot)
    plot.set_defaults(func=cmd_plot)

    md = sub.add_parser("markdown", parents=[common], help="a report's Markdown summary")
    md.add_argument("report", nargs="+",
                    help="a report path, or a baseline name; several (CI shards) are merged")
    md.add_argument("-o", "--md", metavar="PATH", help="write to PATH instead of printing")
    md.add_argument("--github-summary", action="store_true",
                    help="append to $GITHUB_STEP_SUMMARY instead of printing")
    _compare_options(md)
    md.set_defaults(func=cmd_markdown)

    joined = sub.add_parser("merge", parents=[common],
                            help="join the reports of CI shards into one report")
    joined.add_argument("reports", nargs="+", help="report paths (or baseline names)")
    joined.add_argument("-o", "--output", metavar="PATH",
                        help="write the merged report to PATH ('-' or none: print it)")
    add_storage_option(joined)
    joined.set_defaults(func=cmd_merge)

    listing = sub.add_parser("baselines", parents=[common], help="the saved baselines")
    add_storage_option(listing)
    listing.set_defaults(func=cmd_baselines)

    add_calibrate(sub, common)
    add_plan(sub, common)
    add_profile(sub, common)
    return parser


def _usage_of(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def _compare_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--compare", metavar="BASE",
                        help="mark regressions against BASE (a report path or baseline name)")
    add_rule_option(parser, "--fail", "--compare-fail")
    add_storage_option(parser)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (see the module docstring)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        if arguments and arguments[0] == "analyze":
            return cmd_analyze(arguments[1:])
        if arguments and arguments[0] == "sweep":
            return cmd_sweep(arguments[1:])
        parser = build_parser()
        args = parser.parse_args(arguments)
        if not hasattr(args, "func"):
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        register_specs(getattr(args, "spec", []))
        fit_to(width_of(args))
        code: int = args.func(args)
        return code
    except (RooflineError, OSError) as exc:
        text = str(exc) if isinstance(exc, RooflineError) else f"{exc.strerror or exc}: " \
            f"{exc.filename or ''}".rstrip(": ")
        from ..atomic import encodable

        print(encodable(f"{PROG}: error: {one_line(text)}", sys.stderr.encoding or "utf-8"),
              file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
