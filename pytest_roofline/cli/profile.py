"""``profile TRACE``: a PyTorch or ``jax.profiler`` trace priced per kernel on the chip
that ran it.

Exit codes: 0 when the trace was read and priced and no gate asked for failed (without a gate
the command reports, whatever it finds, kernels faster than their bound included); 1 when a
gate failed: a kernel below ``--min-kernel-efficiency``, a kernel faster than physics (its
physical limit) under ``--min-kernel-efficiency`` or ``--fail-faster`` (unless
``--allow-faster``), or a
kernel slower than in ``--baseline`` by more than ``--fail-regression``, or for a job (a
folder, several traces or a glob: every rank's trace), a rank slower than the median step by
more than ``--fail-straggler`` or a collective below ``--min-link-efficiency`` of its link
roof (or none priced to check); 2 for a bad command line or a trace that cannot be read.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import brief
from .common import EXIT_OK, EXIT_REGRESSION, UsageError, echo, positive, print_json, width_of

EXIT_CODES = ("exit codes: 0 priced, and no gate asked for failed (without a gate, whatever "
              "the trace holds); 1 a gate failed: a kernel below --min-kernel-efficiency, "
              "one faster than physics under --min-kernel-efficiency or --fail-faster "
              "(unless --allow-faster), or one slower than in --baseline by more than "
              "--fail-regression; for a job, a rank slower than the median step by more "
              "than --fail-straggler, or a collective below --min-link-efficiency of its "
              "link roof (or none priced); 2 usage error or a trace that cannot be read")


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
    parser.add_argument("trace", nargs="*",
                        help="the trace file (.json or .json.gz; a jax.profiler directory or "
                             ".xplane.pb); or a job's traces, one a rank: a folder of them, "
                             "several files or a glob ('run/*.json.gz')")
    parser.add_argument("--example", metavar="NAME",
                        help="instead of a trace, one installed with the package, recorded "
                             "by others: v100-hta (PyTorch, a V100 training run) or "
                             "mi300x-jax-gemm (JAX, bf16 GEMMs on an MI300X)")
    parser.add_argument("--jobs", type=positive, default=None, metavar="N",
                        help="a job: price N ranks' traces at a time, on processes (default: "
                             "this machine's cores, at most one a trace)")
    parser.add_argument("--dask", metavar="ADDRESS",
                        help="a job: price the ranks on the Dask cluster whose scheduler is at "
                             "ADDRESS (tcp://host:8786), one rank a task; its workers read the "
                             "traces at the same paths (needs pytest-roofline[dask])")
    parser.add_argument("--fail-straggler", metavar="PCT",
                        help="a job: exit 1 when a rank's step is slower than the job's "
                             "median step by more than PCT (10%% or 0.1)")
    parser.add_argument("--min-link-efficiency", metavar="FRACTION",
                        help="a job: exit 1 when a collective runs below this fraction of its "
                             "link roof on a rank (0.5 or 50%%), or when no collective is "
                             "priced to check")
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
                             "roof (0.3 or 30%%), or when one beats its physical limit; per "
                             "kernel pattern as the marker takes it: 'aten::mm=0.4,*=0.01' "
                             "(first match wins) or a JSON object '{\"*gemm*\": 0.5}'")
    parser.add_argument("--fail-faster", action="store_true",
                        help="exit 1 when a kernel beats its physical limit (faster than "
                             "physics: a count or a clock is wrong), without an efficiency "
                             "gate; one above its roof within the limit is a finding, never "
                             "a failure")
    parser.add_argument("--allow-faster", action="store_true",
                        help="a kernel faster than physics is reported, never a failure")
    parser.add_argument("--formulas", metavar="FILE", action="append", default=[],
                        help="a Python file whose register_op(...) calls give ops their "
                             "formulas (a vendor's custom ops): imported before the trace is "
                             "priced (repeatable); rows it prices say so (formula)")
    parser.add_argument("--csv", metavar="FILE",
                        help="write every row as CSV: one line a row, every JSON field, "
                             "stable columns ('-' for standard output)")
    parser.add_argument("--baseline", metavar="OLD",
                        help="compare with OLD, a trace or a profile saved with --json: per "
                             "kernel (op, shapes, layout) the change of a call's time and "
                             "of its %% of roof, and the kernels new and gone")
    parser.add_argument("--fail-regression", metavar="PCT",
                        help="with --baseline: exit 1 when a kernel's call is slower than in "
                             "OLD by more than PCT (10%% or a fraction up to 1: 0.1), beyond "
                             "the noise of both "
                             "(their clock ticks and spreads)")
    parser.add_argument("--markdown", metavar="FILE",
                        help="with --baseline: write the comparison as Markdown, fit for a "
                             "pull request's comment; for a job, its rank table ('-' for "
                             "standard output)")
    parser.set_defaults(func=cmd_profile)


def cmd_profile(args: argparse.Namespace) -> int:
    from ..profiling import read_trace
    from ..profiling.rules import parse_minimum

    _trace_or_example(args)
    if _is_job(args.trace):
        return _cmd_job(args)
    for flag in ("jobs", "dask", "fail_straggler", "min_link_efficiency"):
        if getattr(args, flag) is not None:
            raise UsageError(f"--{flag.replace('_', '-')} reads a job: give a folder of its "
                             f"ranks' traces, several traces or a glob")
    args.trace = args.trace[0]
    if (args.fail_regression is not None or args.markdown is not None) and not args.baseline:
        raise UsageError("--fail-regression and --markdown compare with a baseline: give "
                         "--baseline OLD (a trace, or a profile saved with --json)")
    limit = None if args.fail_regression is None else _percent(args.fail_regression)
    minimum = None if args.min_kernel_efficiency is None else parse_minimum(
        _patterns(args.min_kernel_efficiency), "--min-kernel-efficiency")
    for path in args.formulas:
        load_formulas(path)
    for option, where in (("--csv", args.csv), ("--markdown", args.markdown)):
        _writable(where, option=option)  # said before the trace is read, not after
    result = read_trace(args.trace, hw=args.hw, capture=args.capture,
                        max_bytes=args.max_bytes)
    gated = minimum is not None or args.fail_faster
    failures = result.check(minimum if minimum is not None else {},
                            allow_faster=args.allow_faster) if gated else []
    profile = result.to_dict()
    compared = None
    if args.baseline:
        from ..profiling.diff import diff

        compared = diff(_baseline(args.baseline, args.hw, args.max_bytes), profile,
                        limit=limit)
        failures += [f"regressed against {args.baseline}: {line.removeprefix('REGRESSED: ')}"
                     for line in compared.lines() if line.startswith("REGRESSED: ")]
    if args.csv:
        from ..profiling.csv_rows import to_csv

        _write(args.csv, to_csv(profile), option="--csv")
    if compared is not None and args.markdown:
        _write(args.markdown, compared.markdown(), option="--markdown")
    if args.json:
        print_json({**profile, "failures": failures,
                    **({"baseline": compared.to_dict()} if compared is not None else {})})
    else:
        echo(result.table(top=args.top, width=width_of(args)))
        if compared is not None:
            for line in compared.lines(args.top):
                echo(line)
        for line in failures[: args.top]:
            echo(f"FAIL: {line}")
        if len(failures) > args.top:
            echo(f"FAIL: {len(failures) - args.top} more (--json lists every one)")
    return EXIT_REGRESSION if failures else EXIT_OK


def _percent(text: str, flag: str = "--fail-regression",
             what: str = "of a call's time") -> float:
    """*flag*'s ``10%`` or ``0.1``: a fraction >= 0 (a bare number above 1 is ambiguous)."""
    value = text.strip()
    try:
        number = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        number = -1.0
    if not 0 <= number < float("inf"):
        raise UsageError(f"{flag} {brief(text, 40)} is not allowed; expected a percentage "
                         f"{what} such as 10% (or 0.1)")
    if not value.endswith("%") and number > 1:  # PCT: 10 meant 10%, read as 1000% before
        raise UsageError(f"{flag} {brief(text, 40)} is ambiguous: write {value}% for {value} "
                         f"percent, or a fraction up to 1 (0.1 is 10%)")
    return number


def _trace_or_example(args: argparse.Namespace) -> None:
    """``TRACE ...`` or ``--example NAME`` (a bundled trace's installed path), never both."""
    if args.example is None:
        if not args.trace:
            raise UsageError("profile needs a trace (a file, a jax.profiler folder, or a job's "
                             "traces), or --example NAME for one installed with the package")
        return
    if args.trace:
        raise UsageError("give a trace or --example NAME, not both")
    from ..examples import EXAMPLES, example_path

    if args.example not in EXAMPLES:
        raise UsageError(f"--example {brief(args.example, 40)} is not allowed; expected one "
                         f"of {', '.join(EXAMPLES)}")
    args.trace = [str(example_path(args.example))]


def _is_job(traces: list[str]) -> bool:
    """Several traces, a glob, or a folder holding trace files (a jax.profiler folder holds
    its own deeper down): a job."""
    from pathlib import Path

    if len(traces) > 1:
        return True
    one = traces[0]
    if set("*?[") & set(one) and not Path(one).exists():
        return True
    where = Path(one)
    return where.is_dir() and any(p.is_file() and p.name.endswith((".json", ".json.gz"))
                                  for p in where.iterdir())


def _cmd_job(args: argparse.Namespace) -> int:
    """``profile DIR`` (or several traces, or a glob): every rank read, compared, gated."""
    from ..profiling.job import read_job

    for flag in ("capture", "baseline", "csv"):
        if getattr(args, flag):
            raise UsageError(f"--{flag} reads one trace; a job (several traces, a folder "
                             f"or a glob) takes --jobs, --dask, --fail-straggler, "
                             f"--min-link-efficiency, --markdown and --json")
    straggler = None if args.fail_straggler is None else _percent(
        args.fail_straggler, "--fail-straggler", "of the median step")
    link = None
    if args.min_link_efficiency is not None:
        link = _percent(args.min_link_efficiency, "--min-link-efficiency",
                        "of the link roof")
        if not 0 < link <= 1:
            raise UsageError(f"--min-link-efficiency {args.min_link_efficiency!r:.30} is not "
                             f"allowed; expected a fraction in (0, 1] such as 0.5 (or 50%)")
    for path in args.formulas:
        load_formulas(path)
    _writable(args.markdown, option="--markdown")  # said before the ranks are read
    if args.jobs is not None and args.dask is not None:
        raise UsageError("--jobs N prices the ranks on this machine's processes, --dask "
                         "ADDRESS on a Dask cluster: give one")
    job = read_job(args.trace, hw=args.hw, jobs=args.jobs, max_bytes=args.max_bytes,
                   dask=args.dask)
    failures = job.check(fail_straggler=straggler, min_link_efficiency=link)
    if args.markdown == "-":  # a table's lines whole, never wrapped to the terminal
        print(job.markdown(top=args.top))
    elif args.markdown:
        _write(args.markdown, job.markdown(top=args.top), option="--markdown")
    if args.json:
        print_json({**job.to_dict(), "failures": failures})
    else:
        echo(job.table(top=args.top))
        for line in failures[: args.top]:
            echo(f"FAIL: {line}")
        if len(failures) > args.top:
            echo(f"FAIL: {len(failures) - args.top} more (--json lists every one)")
    return EXIT_REGRESSION if failures else EXIT_OK


def _patterns(text: str) -> Any:
    """``--min-kernel-efficiency``: one fraction, ``PATTERN=FRACTION,...`` or a JSON object
    of patterns to fractions (the marker's mapping)."""
    value = text.strip()
    if value.startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise UsageError(f"--min-kernel-efficiency {text!r:.80} is not a JSON object of "
                             f"patterns to fractions: {exc}") from None
        if not isinstance(parsed, dict):
            raise UsageError("--min-kernel-efficiency: a JSON value must be an object of "
                             "kernel-name patterns to fractions, {\"*gemm*\": 0.5}")
        return parsed
    if "=" not in value:
        return value
    out: dict[str, str] = {}
    for part in value.split(","):
        pattern, sep, fraction = part.rpartition("=")
        if not sep or not pattern.strip():
            raise UsageError(f"--min-kernel-efficiency: {part.strip()!r:.60} is not "
                             f"PATTERN=FRACTION, as in 'aten::mm=0.4,*=0.01'")
        out[pattern.strip()] = fraction.strip()
    return out


def load_formulas(path: str) -> None:
    """Import the Python file *path* for its ``register_op`` calls."""
    import importlib.util
    from pathlib import Path

    where = Path(path)
    if not where.is_file():
        raise UsageError(f"--formulas {path!r}: no such file; give a Python file whose "
                         f"register_op(...) calls give ops their formulas")
    spec = importlib.util.spec_from_file_location(f"_roofline_formulas_{where.stem}", where)
    if spec is None or spec.loader is None:
        raise UsageError(f"--formulas {path!r} is not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: say which and why, one line
        raise UsageError(f"--formulas {path!r} failed to import: {type(exc).__name__}: "
                         f"{str(exc)[:120]}") from None


def _baseline(path: str, hw: Any, max_bytes: int | None) -> dict[str, Any]:
    """The profile of *path*: a saved ``--json`` profile as it is, else a trace read."""
    from ..profiling import read_trace
    from ..profiling.rules import ProfileError

    if path.endswith(".json"):  # a saved profile, or a trace: which, its keys say
        import os

        cap = max_bytes or (1 << 30)
        if os.path.getsize(path) > cap:
            raise ProfileError(f"--baseline {path!r} is larger than {cap} bytes "
                               f"(--max-bytes)")
        with open(path, encoding="utf-8") as handle:
            try:
                data = json.load(handle)
            except ValueError as exc:
                raise ProfileError(f"--baseline {path!r} is not JSON: {exc}") from None
        if isinstance(data, dict) and "traceEvents" not in data:
            if isinstance(data.get("rows"), list):
                return data
            raise ProfileError(f"--baseline {path!r} is neither a trace (no traceEvents) "
                               f"nor a profile saved with --json (no rows)")
    return read_trace(path, hw=hw, max_bytes=max_bytes).to_dict()


def _writable(where: str | None, *, option: str) -> None:
    from ..atomic import why_not_writable

    why = None if where in (None, "-") else why_not_writable(where)
    if why is not None:
        raise UsageError(f"{option} {brief(where, 80)}: cannot write ({why})")


def _write(where: str, text: str, *, option: str) -> None:
    """*text* to the file *option* names ("-": the terminal), or a one-line error naming the
    option, the file and why (a full disk, a file-size limit, a folder in the way)."""
    if where == "-":
        echo(text.rstrip("\n"))
        return
    from ..atomic import why_not_written, write_text

    try:
        write_text(where, text)
    except OSError as exc:
        raise UsageError(f"{option} {brief(where, 80)}: cannot write "
                         f"({why_not_written(exc, where)})") from None
