"""The ``pytest-roofline`` command (also ``python -m pytest_roofline``).

Subcommands::

    hw list | hw show NAME                 the chips: peaks per precision, bandwidths, ridges
    analyze OP [--ARG VALUE ...] --hw ...  an op of pytest_roofline.ops on one or more chips
    analyze model NAME --phase P [...]     a model phase, with a per-kernel breakdown
    sweep OP|model NAME --param P --range LO:HI [...]   where the regime changes
    compare BASE NEW [--fail RULE ...]     the baseline gate of the plugin, from two reports
    plot REPORT [-o chart.png|chart.svg]   a roofline chart (characters when no file is given)
    markdown REPORT [--compare BASE]       the Markdown summary
    baselines                              the baselines saved in the storage folder

Human output by default, ``--json`` for machines. Exit codes: 0 success, 1 regressions found
(``compare``), 2 a usage or input error (bad option or rule, unknown chip, op or model, a
missing or corrupt report): one line on stderr, no traceback.

The options of an op are built from its function's signature (``ops.matmul(m, k, n, *,
dtype)`` gives ``--m --k --n --dtype``), so every op is reachable without a table to keep
in step; ``pytest-roofline analyze OP --help`` lists them.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import baseline, rules
from .errors import RooflineError

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
PROG = "pytest-roofline"
PHASES = ("decode", "prefill", "forward", "train_step")


class UsageError(RooflineError, ValueError):
    """A command line that cannot be run as written."""


# -- shared option definitions ---------------------------------------------------------------


def add_rule_option(parser: argparse.ArgumentParser, *flags: str) -> None:
    """The compare-rule option (repeatable, every value kept), as the plugin defines it."""
    parser.add_argument(*(flags or ("--fail",)), dest="rules", action="append", default=[],
                        metavar="RULE", help=rules.HELP.replace("%", "%%"))


def add_storage_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--storage", metavar="DIR", default=baseline.DEFAULT_FOLDER,
                        help=f"folder of named baselines (default: {baseline.DEFAULT_FOLDER} "
                             f"in the current directory)")


def _common() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--json", action="store_true", help="print JSON instead of text")
    parent.add_argument("--spec", "--specs", dest="spec", action="append", default=[],
                        metavar="PATH",
                        help="a hardware spec file or folder of them to know (repeatable)")
    return parent


def _analysis_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hw", required=True, metavar="CHIPS",
                        help="chips, comma-separated (names, aliases or spec files)")
    parser.add_argument("--flops-per-mac", type=int, choices=(1, 2), default=2,
                        help="FLOPs counted per multiply-accumulate (default 2)")
    parser.add_argument("--derate", type=float, default=1.0,
                        help="fraction of every roof reached, in (0, 1] (default 1)")
    parser.add_argument("--sparse", action="store_true",
                        help="use the structured-sparse matrix peaks")


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    return {"flops_per_mac": args.flops_per_mac, "derate": args.derate, "sparse": args.sparse}


def _register_specs(paths: Sequence[str]) -> None:
    from .hardware import CATALOG

    for path in paths:
        CATALOG.register_path(path)


def _chips(text: str) -> list[Any]:
    from .hardware import get_hardware

    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--hw needs at least one chip name, got {text!r}")
    return [get_hardware(n) for n in names]


def _out(text: str = "") -> None:
    """Print to stdout; a closed pipe (``| head``) silences the rest instead of failing."""
    try:
        print(text)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _print_json(data: Any) -> None:
    _out(json.dumps(data, indent=2, default=_jsonable, allow_nan=True))


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> str:
    from .table import render

    return "\n".join(render(headers, rows, align=align))


# -- hw --------------------------------------------------------------------------------------


def _cmd_hw_list(args: argparse.Namespace) -> int:
    from .hardware import get_hardware, list_hardware
    from .units import si

    chips = [get_hardware(n) for n in list_hardware()]
    if args.json:
        _print_json([c.summary() for c in chips])
        return EXIT_OK
    rows = [[c.name, ", ".join(c.aliases) or "-", c.vendor or "-",
             si(c.memory_capacity, "B"), si(c.memory_bandwidth, "B/s"), c.default_dtype,
             si(c.peak(), "FLOP/s"), f"{c.ridge():.1f}"] for c in chips]
    _out(_table(["chip", "aliases", "vendor", "memory", "bandwidth", "dtype", "peak",
                  "ridge FLOP/B"], rows, align="llllrlrr"))
    _out(f"\n{len(chips)} chips; peaks are dense matrix peaks in the chip's default precision."
          f" `{PROG} hw show NAME` lists every precision.")
    return EXIT_OK


def _cmd_hw_show(args: argparse.Namespace) -> int:
    from .hardware import get_hardware
    from .units import si

    chip = get_hardware(args.name)
    if args.json:
        _print_json(chip.summary())
        return EXIT_OK
    aliases = f" (aliases: {', '.join(chip.aliases)})" if chip.aliases else ""
    _out(f"{chip.name}{aliases}: {chip.description or chip.vendor}")
    _out(f"memory: {si(chip.memory_capacity, 'B')} at {si(chip.memory_bandwidth, 'B/s')}; "
          f"default precision {chip.default_dtype}\n")
    names = list(dict.fromkeys([*chip.matrix, *chip.matrix_sparse, *chip.vector]))

    def peak(table: Any, name: str) -> str:
        return si(table[name], "FLOP/s") if name in table else "-"

    rows = [[n, peak(chip.matrix, n), peak(chip.matrix_sparse, n), peak(chip.vector, n),
             f"{chip.ridge(n):.1f}" if n in chip.matrix else "-"] for n in names]
    _out(_table(["precision", "matrix (dense)", "matrix (sparse)", "vector",
                  "ridge FLOP/B"], rows, align="lrrrr"))
    if chip.links:
        _out("\nlinks (one direction):")
        for link in chip.links.values():
            _out(f"  {link.name}: {link.count} x {si(link.bandwidth, 'B/s')} = "
                  f"{si(link.total, 'B/s')}" + (f"  ({link.note})" if link.note else ""))
    if chip.onchip:
        _out("\non-chip memory: " + ", ".join(
            f"{lv.name} {si(lv.capacity, 'B')}" for lv in chip.onchip))
    _out("\nsources:")
    for key, text in chip.sources.items():
        _out(f"  {key}: {text}")
    _out(f"\nspec: {chip.origin}")
    return EXIT_OK


# -- analyze and sweep: options from function signatures ------------------------------------


_SHAPE = re.compile(r"^\d+(?:[x,]\d+)+$")
_INT = re.compile(r"^[+-]?\d+$")
_RESERVED = {"hw", "json", "spec", "flops_per_mac", "derate", "sparse", "phase", "param",
             "range", "help"}


def convert(text: str) -> Any:
    """A command-line value as the ops take it: 32 -> int, 0.5 -> float, 3x3 -> (3, 3),
    anything else (bf16, '4 GB') stays a string."""
    value = text.strip()
    if _INT.match(value):
        return int(value)
    if _SHAPE.match(value):
        return tuple(int(v) for v in re.split(r"[x,]", value))
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if number.is_integer() and "e" in value.lower() else number


def _is_flag(param: inspect.Parameter) -> bool:
    return param.annotation in ("bool", bool) or isinstance(param.default, bool)


def add_signature_options(parser: argparse.ArgumentParser, func: Callable[..., Any],
                          skip: Sequence[str] = ()) -> list[str]:
    """One option per parameter of *func*; returns the names added."""
    added: list[str] = []
    for name, param in inspect.signature(func).parameters.items():
        if name in skip or name in _RESERVED or param.kind is param.VAR_KEYWORD:
            continue
        flags = [f"--{name.replace('_', '-')}"] + ([f"--{name}"] if "_" in name else [])
        if param.kind is param.VAR_POSITIONAL:
            parser.add_argument(*flags, dest=name, nargs="+", type=convert,
                                default=argparse.SUPPRESS, metavar="VALUE",
                                help="one or more values (shapes as 32x8192)")
        elif _is_flag(param):
            parser.add_argument(*flags, dest=name, action=argparse.BooleanOptionalAction,
                                default=argparse.SUPPRESS,
                                help=f"(default: {param.default})".replace("%", "%%"))
        else:
            required = param.default is inspect.Parameter.empty
            text = "required" if required else f"optional (default: {param.default})"
            parser.add_argument(*flags, dest=name, type=convert, default=argparse.SUPPRESS,
                                required=required, metavar="VALUE",
                                help=text.replace("%", "%%"))
        added.append(name)
    return added


def call_with(func: Callable[..., Any], values: dict[str, Any]) -> Any:
    """Call *func* with the options given (parameters not given keep their defaults)."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for name, param in inspect.signature(func).parameters.items():
        if name not in values:
            continue
        if param.kind is param.VAR_POSITIONAL:
            args.extend(values[name])
        elif param.kind is param.POSITIONAL_ONLY:
            args.append(values[name])
        else:
            kwargs[name] = values[name]
    return func(*args, **kwargs)


def _op_names() -> list[str]:
    from . import ops

    names = getattr(ops, "__all__", None) or [
        n for n, f in vars(ops).items() if inspect.isfunction(f) and not n.startswith("_")]
    return sorted(str(n) for n in names)


def _op(name: str) -> Callable[..., Any]:
    from . import ops
    from .errors import did_you_mean

    names = _op_names()
    if name not in names:
        raise UsageError(f"unknown op {name!r}." + did_you_mean(name, names)
                         + f" Ops: {', '.join(names)}; or 'model NAME'.")
    func: Callable[..., Any] = getattr(ops, name)
    return func


def _model(name: str) -> Any:
    from . import models

    load = getattr(models, "load", None)
    if load is None:  # pragma: no cover - a package without the models catalog
        raise UsageError("this installation has no model catalog")
    return load(name)


def _model_names() -> list[str]:
    try:
        from . import models

        names = getattr(models, "list_models", None)
        return list(names()) if callable(names) else []
    except Exception:  # pragma: no cover - listing is only a hint in help text
        return []


class _Target:
    """What `analyze`/`sweep` works on: an op, or a model phase, and its parameters."""

    def __init__(self, command: str, argv: Sequence[str]) -> None:
        if not argv or argv[0] in ("-h", "--help"):
            self._usage(command, full=bool(argv))
        self.kind = argv[0]
        rest = list(argv[1:])
        if self.kind == "model":
            if not rest or rest[0].startswith("-"):
                raise UsageError(f"{command} model needs a model name: `{PROG} {command} model "
                                 f"llama-3-8b --phase decode --batch 8 --context 4096 --hw "
                                 f"h100`")
            self.title = rest.pop(0)
            model = _model(self.title)
            phases = [p for p in PHASES if callable(getattr(model, p, None))]
            pre = argparse.ArgumentParser(add_help=False)
            pre.add_argument("--phase", choices=phases, default=phases[0] if phases else None)
            known, _ = pre.parse_known_args(rest)
            self.phase = known.phase
            self.func: Callable[..., Any] = getattr(model, self.phase)
            self.label = f"{self.title} {self.phase}"
        else:
            self.func = _op(self.kind)
            self.title = self.kind
            self.phase = None
            self.label = self.kind
        self.rest = rest

    @staticmethod
    def _usage(command: str, full: bool) -> None:
        example = ("analyze matmul --m 32 --k 8192 --n 8192 --hw h100,tpu-v5e" if command ==
                   "analyze" else "sweep matmul --param m --range 1:4096 --k 8192 --n 8192 "
                                  "--hw h100")
        models = _model_names()
        text = (f"usage: {PROG} {command} OP [--ARG VALUE ...] --hw CHIPS\n"
                f"       {PROG} {command} model NAME [--phase PHASE] [--ARG VALUE ...] "
                f"--hw CHIPS\n\n"
                f"ops: {', '.join(_op_names())}\n"
                + (f"models: {', '.join(models)}\n" if models else "")
                + f"phases: {', '.join(PHASES)} (as the model offers)\n\n"
                f"`{PROG} {command} OP --help` lists the op's options. Example:\n"
                f"  {PROG} {example}")
        print(text, file=sys.stdout if full else sys.stderr)
        raise SystemExit(EXIT_OK if full else EXIT_USAGE)

    def parser(self, command: str, skip: Sequence[str] = ()) -> argparse.ArgumentParser:
        doc = inspect.getdoc(self.func) or ""
        parser = argparse.ArgumentParser(
            prog=f"{PROG} {command} {self.kind}" + (f" {self.title}" if self.phase else ""),
            description=doc.split("\n\n")[0], parents=[_common()])
        if self.phase is not None:
            parser.add_argument("--phase", default=self.phase, help="the model phase")
        _analysis_options(parser)
        self.params = add_signature_options(parser, self.func, skip)
        return parser


def _verdict_hint(workload: Any, chip: Any, regime: str, settings: dict[str, Any]) -> str | None:
    from .analysis import knob_hint

    other = "compute" if regime != "compute" else "memory"
    try:
        return knob_hint(workload, chip, other, **settings)
    except RooflineError:
        return None


def _fmt(value: Any, unit: str) -> str:
    from .units import format_time, si

    if not isinstance(value, (int, float)):
        return "-"
    if unit == "s":
        return format_time(float(value))
    if unit == "FLOP/B":
        return rules.format_number(float(value))
    return si(float(value), unit)


def _fits(value: Any) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def _cmd_analyze(argv: Sequence[str]) -> int:
    from .analysis import analyze

    target = _Target("analyze", argv)
    args = target.parser("analyze").parse_args(target.rest)
    _register_specs(args.spec)
    values = {n: getattr(args, n) for n in target.params if hasattr(args, n)}
    workload = call_with(target.func, values)
    settings = _settings(args)
    results = [(chip, analyze(workload, chip, **settings)) for chip in _chips(args.hw)]
    hints = {r.hw: _verdict_hint(workload, chip, r.regime, settings) for chip, r in results}
    if args.json:
        out = []
        for _, r in results:
            item = r.to_dict()
            item["hint"] = hints[r.hw]
            item["shares_s"] = dict(r.shares)
            item["kernels"] = [_kernel_dict(k) for k in r.kernels]
            out.append(item)
        _print_json({"target": target.label, "workload": workload.name, "results": out})
        return EXIT_OK
    _out(f"{workload.name}: {_fmt(workload.flops, 'FLOP')}, {_fmt(workload.bytes, 'B')}, "
          f"intensity {_fmt(workload.intensity, 'FLOP/B')} FLOP/B"
          + (f", footprint {_fmt(workload.footprint, 'B')}" if workload.footprint else ""))
    _out()
    rows = [[r.hw, r.dtype, _fmt(r.intensity, "FLOP/B"), _fmt(r.ridge, "FLOP/B"), r.regime,
             _fmt(r.time, "s"), _fmt(r.attainable, "FLOP/s"), _fits(r.fits)]
            for _, r in results]
    _out(_table(["chip", "dtype", "FLOP/B", "ridge", "regime", "time", "attainable",
                  "fits"], rows, align="llrrlrrl"))
    for _, r in results:
        if hints[r.hw]:
            _out(f"  {r.hw}: {r.regime}-bound; {hints[r.hw]}")
    for _, r in results:
        if len(r.kernels) > 1:
            _out(f"\nbreakdown on {r.hw} ({r.dtype}):")
            kernel_rows = [[k.name, f"{float(k.count):g}", _fmt(k.flops, "FLOP"),
                            _fmt(k.bytes, "B"), _fmt(k.intensity, "FLOP/B"), str(k.regime),
                            _fmt(k.time, "s"), f"{100 * float(k.share):.1f}%"]
                           for k in r.kernels]
            _out(_table(["kernel", "count", "FLOPs", "bytes", "FLOP/B", "regime", "time",
                          "share"], kernel_rows, align="lrrrrlrr"))
    return EXIT_OK


def _kernel_dict(kernel: Any) -> dict[str, Any]:
    return {"name": kernel.name, "count": kernel.count, "flops": kernel.flops,
            "bytes": kernel.bytes, "link_bytes": kernel.link_bytes,
            "intensity": kernel.intensity, "peak": kernel.peak_label, "regime": kernel.regime,
            "time_s": kernel.time, "share": kernel.share}


def parse_range(text: str) -> tuple[int, int]:
    """``"1:4096"`` -> ``(1, 4096)``: whole numbers, low <= high, both inclusive."""
    match = re.match(r"^\s*(\d+)\s*:\s*(\d+)\s*$", text)
    if not match or int(match.group(1)) > int(match.group(2)):
        raise UsageError(f"--range {text!r}: expected LOW:HIGH, whole numbers with "
                         f"LOW <= HIGH, e.g. 1:4096")
    return int(match.group(1)), int(match.group(2))


def regime_segments(regime_at: Callable[[int], str], lo: int, hi: int,
                    samples: int = 257) -> list[tuple[int, int, str]]:
    """``[(first, last, regime), ...]`` covering [lo, hi]: where the regime holds.

    Samples the range (every value when it is small, else geometrically), then finds each
    change exactly by bisection between the samples that straddle it.
    """
    from .analysis import last_true

    if hi - lo + 1 <= samples:
        points = list(range(lo, hi + 1))
    else:
        ratio = (hi / max(lo, 1)) ** (1 / (samples - 1))
        points = sorted({lo, hi, *(min(hi, max(lo, round(max(lo, 1) * ratio ** i)))
                                   for i in range(samples))})
    regimes = [regime_at(x) for x in points]
    segments: list[tuple[int, int, str]] = []
    start, current = lo, regimes[0]
    for i in range(1, len(points)):
        low = points[i - 1]
        while current != regimes[i]:
            # current holds at low, not at points[i]: find where it stops
            def holds(x: int, now: str = current) -> bool:
                return regime_at(x) == now

            low = last_true(holds, low, points[i])
            high = low + 1
            segments.append((start, low, current))
            start, current, low = high, regime_at(high), high  # maybe another change follows
    segments.append((start, hi, current))
    return segments


def _cmd_sweep(argv: Sequence[str]) -> int:
    from .analysis import analyze

    target = _Target("sweep", argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--param")
    known, _ = pre.parse_known_args(target.rest)
    parser = target.parser("sweep", skip=())
    for action in parser._actions:  # the swept parameter takes its values from --range
        if known.param and action.dest == known.param:
            action.required = False
    parser.add_argument("--param", required=True, help="the parameter to sweep")
    parser.add_argument("--range", dest="span", required=True, metavar="LOW:HIGH",
                        help="inclusive range of whole numbers, e.g. 1:4096")
    args = parser.parse_args(target.rest)
    _register_specs(args.spec)
    if args.param not in target.params:
        from .errors import did_you_mean

        raise UsageError(f"--param {args.param!r}: {target.label} has no such parameter."
                         + did_you_mean(args.param, target.params)
                         + f" Parameters: {', '.join(target.params)}")
    lo, hi = parse_range(args.span)
    values = {n: getattr(args, n) for n in target.params if hasattr(args, n)}
    settings = _settings(args)
    report = []
    for chip in _chips(args.hw):
        def regime_at(x: int, chip: Any = chip) -> str:
            workload = call_with(target.func, {**values, args.param: x})
            return str(analyze(workload, chip, **settings).regime)

        segments = regime_segments(regime_at, lo, hi)
        sample = analyze(call_with(target.func, {**values, args.param: lo}), chip, **settings)
        report.append({
            "hw": chip.name, "dtype": sample.dtype, "ridge": sample.ridge,
            "param": args.param, "range": [lo, hi],
            "segments": [{"from": a, "to": b, "regime": r} for a, b, r in segments],
            "changes": [{"at": segments[i + 1][0], "from": segments[i][2],
                         "to": segments[i + 1][2]} for i in range(len(segments) - 1)],
        })
    if args.json:
        _print_json({"target": target.label, "results": report})
        return EXIT_OK
    fixed = ", ".join(f"{k}={v}" for k, v in values.items() if k != args.param)
    _out(f"{target.label}({args.param}={lo}..{hi}" + (f", {fixed}" if fixed else "") + ")")
    for item in report:
        _out(f"\n{item['hw']} ({item['dtype']}, ridge {rules.format_number(item['ridge'])} "
              f"FLOP/B):")
        for seg in item["segments"]:
            _out(f"  {args.param} {seg['from']}..{seg['to']}: {seg['regime']}-bound")
        if item["changes"]:
            for change in item["changes"]:
                _out(f"  regime changes at {args.param} = {change['at']} "
                      f"({change['from']} -> {change['to']})")
        else:
            _out(f"  no regime change in {args.param} {lo}..{hi}")
    return EXIT_OK


# -- reports: compare, plot, markdown, baselines --------------------------------------------


def _load(storage: str, name: str) -> tuple[dict[str, Any], str]:
    """A report by path, or a baseline by name in *storage*."""
    if not baseline.is_path(name) and not baseline.exists(storage, name) and Path(name).is_file():
        name = os.path.join(".", name)  # an existing file written without a folder
    return baseline.load(storage, name), name


def _comparison(args: argparse.Namespace, new: dict[str, Any]) -> Any:
    from .compare import compare

    if not getattr(args, "compare", None):
        return None
    base, label = _load(args.storage, args.compare)
    return compare(base, new, rules.parse_rules(args.rules), base=label)


def _cmd_compare(args: argparse.Namespace) -> int:
    from .compare import compare

    rule_objs = rules.parse_rules(args.rules)
    base, base_label = _load(args.storage, args.base)
    new, _ = _load(args.storage, args.new)
    result = compare(base, new, rule_objs, base=base_label)
    _write_markdown(args, new, result)
    if args.json:
        _print_json(result.to_dict())
    else:
        _out(f"comparing {args.new} against {base_label} (checks: "
              f"{rules.describe(rule_objs)})")
        _out("\n".join(result.lines()))
    return EXIT_REGRESSION if result.failed else EXIT_OK


def _write_markdown(args: argparse.Namespace, report: dict[str, Any], comparison: Any) -> None:
    from . import markdown

    if not (getattr(args, "md", None) or getattr(args, "github_summary", False)):
        return
    text = markdown.render(report, comparison)
    if args.md:
        markdown.write(args.md, text)
    if args.github_summary and markdown.append_step_summary(text) is None:
        print(f"{PROG}: note: {markdown.STEP_SUMMARY} is not set; no job summary written",
              file=sys.stderr)


def _cmd_markdown(args: argparse.Namespace) -> int:
    from . import markdown

    report, _ = _load(args.storage, args.report)
    comparison = _comparison(args, report)
    if args.md or args.github_summary:
        _write_markdown(args, report, comparison)
    else:
        _out(markdown.render(report, comparison))
    return EXIT_OK


def _cmd_plot(args: argparse.Namespace) -> int:
    from . import ascii_plot, plot

    report, _ = _load(args.storage, args.report)
    comparison = _comparison(args, report)
    if args.output in (None, "term", "-"):
        text = ascii_plot.render(report, comparison, width=args.width, height=args.height)
        if args.json:
            _print_json({"chart": text})
        else:
            _out(text)
        return EXIT_OK
    path = plot.write(report, args.output, comparison, title=args.title)
    if args.json:
        _print_json({"written": str(path)})
    else:
        _out(f"wrote {path}")
    return EXIT_OK


def _cmd_baselines(args: argparse.Namespace) -> int:
    found = baseline.list_baselines(args.storage)
    if args.json:
        _print_json([b.to_dict() for b in found])
        return EXIT_OK
    if not found:
        _out(f"no baselines in {args.storage}")
        return EXIT_OK
    rows = [[b.name, b.datetime or "-", "-" if b.results is None else str(b.results),
             b.error or str(b.path)] for b in found]
    _out(_table(["name", "saved", "results", "file"], rows, align="llrl"))
    return EXIT_OK


# -- the parser ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog=PROG, description="Roofline verdicts from the command line: chips, ops and "
        "models, sweeps, and the baseline gate for CI.",
        epilog="exit codes: 0 success, 1 regressions found (compare), 2 usage or input error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    hw = sub.add_parser("hw", help="list the chips, or show one")
    hw.set_defaults(func=lambda _args: _usage_of(hw))
    hw_sub = hw.add_subparsers(dest="hw_command", metavar="list|show")
    hw_sub.add_parser("list", parents=[common], help="every known chip").set_defaults(
        func=_cmd_hw_list)
    show = hw_sub.add_parser("show", parents=[common], help="one chip's figures and sources")
    show.add_argument("name", help="chip name, alias or spec file")
    show.set_defaults(func=_cmd_hw_show)

    sub.add_parser("analyze", help="an op or a model phase on chips (analyze OP --help)",
                   add_help=False)
    sub.add_parser("sweep", help="sweep a parameter; where does the regime change?",
                   add_help=False)

    cmp_ = sub.add_parser("compare", parents=[common],
                          help="compare a report with a baseline; exit 1 on regressions")
    cmp_.add_argument("base", help="baseline: a report path, or a name in the storage folder")
    cmp_.add_argument("new", help="the new report: a path, or a name in the storage folder")
    add_rule_option(cmp_, "--fail", "--compare-fail")
    add_storage_option(cmp_)
    cmp_.add_argument("--md", metavar="PATH", help="also write the Markdown summary to PATH")
    cmp_.add_argument("--github-summary", action="store_true",
                      help="also append the Markdown summary to $GITHUB_STEP_SUMMARY")
    cmp_.set_defaults(func=_cmd_compare)

    plot = sub.add_parser("plot", parents=[common], help="draw a report's roofline chart")
    plot.add_argument("report", help="a report path, or a baseline name")
    plot.add_argument("-o", "--output", metavar="PATH",
                      help="chart.png, chart.svg or chart.pdf (needs the plot extra); "
                           "'term' or none: characters on the terminal")
    plot.add_argument("--title", help="a title over the figure")
    plot.add_argument("--width", type=int, default=72, help="terminal chart columns")
    plot.add_argument("--height", type=int, default=20, help="terminal chart rows")
    _compare_options(plot)
    plot.set_defaults(func=_cmd_plot)

    md = sub.add_parser("markdown", parents=[common], help="a report's Markdown summary")
    md.add_argument("report", help="a report path, or a baseline name")
    md.add_argument("-o", "--md", metavar="PATH", help="write to PATH instead of printing")
    md.add_argument("--github-summary", action="store_true",
                    help="append to $GITHUB_STEP_SUMMARY instead of printing")
    _compare_options(md)
    md.set_defaults(func=_cmd_markdown)

    listing = sub.add_parser("baselines", parents=[common], help="the saved baselines")
    add_storage_option(listing)
    listing.set_defaults(func=_cmd_baselines)
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
            return _cmd_analyze(arguments[1:])
        if arguments and arguments[0] == "sweep":
            return _cmd_sweep(arguments[1:])
        parser = build_parser()
        args = parser.parse_args(arguments)
        if not hasattr(args, "func"):
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        _register_specs(getattr(args, "spec", []))
        code: int = args.func(args)
        return code
    except (RooflineError, OSError) as exc:
        text = str(exc) if isinstance(exc, RooflineError) else f"{exc.strerror or exc}: " \
            f"{exc.filename or ''}".rstrip(": ")
        print(f"{PROG}: error: {text}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
