"""``compare``, ``plot``, ``markdown`` and ``baselines``: the CI gate from report files."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import RooflineError
from ..report import baseline, rules
from ..report.records import write_report
from . import common
from .common import (
    EXIT_OK,
    EXIT_REGRESSION,
    PROG,
    echo,
    print_json,
    render_table,
    terminal_width,
    width_of,
    wrap,
)

if TYPE_CHECKING:
    from ..report.records import Report

# -- reports: compare, plot, markdown, baselines --------------------------------------------


def _load(storage: str, name: str) -> tuple[Report, str]:
    """A report by path, or a baseline by name in *storage*."""
    if not baseline.is_path(name) and not baseline.exists(storage, name) and Path(name).is_file():
        name = os.path.join(".", name)  # an existing file written without a folder
    return baseline.load(storage, name), name


def _load_many(storage: str, names: list[str] | str) -> tuple[Report, str]:
    """Several reports (CI shards) joined into one (see ``merge``), or one report."""
    if isinstance(names, str) or len(names) == 1:
        return _load(storage, names if isinstance(names, str) else names[0])
    from ..report.merge import merge

    loaded = [_load(storage, name) for name in names]
    return merge([(label, report) for report, label in loaded]), " + ".join(names)


def cmd_merge(args: argparse.Namespace) -> int:
    report, _ = _load_many(args.storage, args.reports)
    if args.output in (None, "-"):
        print_json(report)
        return EXIT_OK
    write_report(args.output, report)
    if not args.json:
        echo(f"merged {len(args.reports)} reports ({len(report['results'])} results) into "
             f"{args.output}")
    return EXIT_OK


def _comparison(args: argparse.Namespace, new: Report) -> Any:
    from ..report.compare import compare

    if not getattr(args, "compare", None):
        return None
    base, label = _load(args.storage, args.compare)
    return compare(base, new, rules.parse_rules(args.rules), base=label)


def cmd_compare(args: argparse.Namespace) -> int:
    from ..report.compare import compare

    rule_objs = rules.parse_rules(args.rules)
    base, base_label = _load(args.storage, args.base)
    new, new_label = _load_many(args.storage, args.new)
    result = compare(base, new, rule_objs, base=base_label)
    _write_markdown(args, new, result)
    if args.csv:
        from ..report.compare import to_csv

        text = to_csv(result, base, new)
        if args.csv == "-":
            from ..atomic import encodable

            sys.stdout.write(encodable(text, sys.stdout.encoding or "utf-8"))
        else:
            from ..atomic import write_text

            write_text(args.csv, text)
    if args.json:
        print_json(result.to_dict())
    elif args.csv != "-":
        from ..report.compare import side_by_side
        width = width_of(args)
        echo(wrap(f"comparing {new_label} against {base_label} (checks: "
                  f"{rules.describe(rule_objs)})", width))
        echo()
        echo("\n".join(side_by_side(result, base, new, width=width)))
        echo()
        echo("\n".join(wrap(line, width, hang="    ") for line in result.lines()))
    return EXIT_REGRESSION if result.failed else EXIT_OK


def _width() -> int:
    return terminal_width()


def _write_markdown(args: argparse.Namespace, report: Report, comparison: Any) -> None:
    if not (getattr(args, "md", None) or getattr(args, "github_summary", False)):
        return
    from ..report.publish import publish

    _check(publish(report, comparison=comparison, md=args.md or None,
                   github_summary=bool(args.github_summary)))


def _check(done: Any) -> None:
    """Word what :func:`.report.publish.publish` did: a note, or the first failure as an
    error (exit status 2)."""
    from ..report.markdown import STEP_SUMMARY

    for outcome in done.outcomes:
        if outcome.status == "unset":
            print(f"{PROG}: note: {STEP_SUMMARY} is not set; no job summary written",
                  file=sys.stderr)
        elif outcome.status == "refused":
            raise RooflineError(outcome.why)
        elif outcome.status == "empty":
            raise RooflineError("nothing to plot: the report has no roofline results")
        elif outcome.status == "failed":
            raise RooflineError(f"cannot write {outcome.target}: {outcome.why}")


def cmd_markdown(args: argparse.Namespace) -> int:
    from ..report import markdown

    report, _ = _load_many(args.storage, args.report)
    comparison = _comparison(args, report)
    if args.md or args.github_summary:
        _write_markdown(args, report, comparison)
    else:
        echo(markdown.render(report, comparison), raw=True)  # Markdown source: never wrapped
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    from ..report import ascii_plot

    report, _ = _load_many(args.storage, args.report)
    comparison = _comparison(args, report)
    if args.output in (None, "term", "-"):
        columns = args.width if args.width is not None else (
            ascii_plot.chart_width(common.WIDTH) if common.WIDTH is not None else 72)
        text = ascii_plot.render(report, comparison, width=columns, height=args.height,
                                 columns=None if common.WIDTH is None else min(common.WIDTH, 80))
        if args.json:
            print_json({"chart": text})
        else:
            echo(text)
        return EXIT_OK
    from ..report.publish import publish

    done = publish(report, comparison=comparison, plots=[args.output], title=args.title)
    _check(done)
    (outcome,) = done.outcomes
    path = outcome.target
    if args.json:
        print_json({"written": str(path)})
    else:
        echo(f"wrote {path}")
    return EXIT_OK


def cmd_baselines(args: argparse.Namespace) -> int:
    found = baseline.list_baselines(args.storage)
    if args.json:
        print_json([b.to_dict() for b in found])
        return EXIT_OK
    if not found:
        echo(f"no baselines in {args.storage}")
        return EXIT_OK
    rows = [[b.name, b.datetime or "-", "-" if b.results is None else str(b.results),
             b.error or str(b.path)] for b in found]
    echo(render_table(["name", "saved", "results", "file"], rows, align="llrl"))
    return EXIT_OK


