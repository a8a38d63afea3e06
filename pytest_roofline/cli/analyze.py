"""``analyze`` and ``sweep``: ops and model phases from the command line.

The options of an op are built from its function's signature, so every op is reachable
without a table to keep in step.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import RooflineError, did_you_mean
from ..report import rules
from ..text_table import wrap_line
from ..units import format_time, si
from . import common
from .common import (
    EXIT_OK,
    EXIT_USAGE,
    PHASES,
    PROG,
    Parser,
    UsageError,
    analysis_options,
    analysis_settings,
    chips,
    common_options,
    echo,
    fit_to,
    print_json,
    register_specs,
    render_table,
    terminal_width,
    width_of,
)

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


def needed_sizes(func: Callable[..., Any]) -> set[str]:
    """Parameters that default to None only for the array form (``matmul(a, b)`` leaves k and n
    out) but are needed when sizes are given, as the command line gives them: found by calling
    *func* with small sizes, leaving out one such parameter at a time."""
    params = inspect.signature(func).parameters.values()
    sizes = {p.name: 8 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
             and p.default in (inspect.Parameter.empty, None)}
    sizes.update({p.name: 2 for p in params if p.kind is p.KEYWORD_ONLY
                  and p.default is inspect.Parameter.empty})
    optional = [p.name for p in params if p.default is None and p.name in sizes]
    try:
        func(**sizes)
    except Exception:  # the probe's sizes do not suit this op: claim nothing
        return set()
    needed = set()
    for name in optional:
        try:
            func(**{k: v for k, v in sizes.items() if k != name})
        except RooflineError:
            needed.add(name)
    return needed


class _Flag(argparse.BooleanOptionalAction):
    """A yes/no option: ``--name`` and ``--no-name``, also spelled with ``_`` (the Python
    parameter's name). The usage line shows the first two spellings only; the option's
    help lists all four."""

    def format_usage(self) -> str:
        return " | ".join(self.option_strings[:2])


def add_signature_options(parser: argparse.ArgumentParser, func: Callable[..., Any],
                          skip: Sequence[str] = (), *, phase: str | None = None,
                          swept: str | None = None) -> list[str]:
    """One option per parameter of *func*; returns the names added. With *phase* (the help
    of another phase than the one parsed) nothing is required, and the help says when; the
    *swept* parameter takes its values from ``--range`` and is not required either."""
    added: list[str] = []
    needed = needed_sizes(func)
    for name, param in inspect.signature(func).parameters.items():
        if name in skip or name in _RESERVED or param.kind is param.VAR_KEYWORD:
            continue
        flags = [f"--{name.replace('_', '-')}"] + ([f"--{name}"] if "_" in name else [])
        if param.kind is param.VAR_POSITIONAL:
            parser.add_argument(*flags, dest=name, nargs="+", type=convert,
                                default=argparse.SUPPRESS, metavar="VALUE",
                                help="one or more values (shapes as 32x8192)")
        elif _is_flag(param):
            parser.add_argument(*flags, dest=name, action=_Flag,
                                default=argparse.SUPPRESS,
                                help=f"(default: {param.default})".replace("%", "%%"))
        else:
            required = param.default is inspect.Parameter.empty or name in needed
            text = "required" if required else (
                "optional" if param.default is None else f"optional (default: {param.default})")
            if required and phase is not None:
                required, text = False, f"required with --phase {phase}"
            elif name == swept:
                required, text = False, "swept by --range"
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
    from .. import ops

    names = getattr(ops, "__all__", None) or [
        n for n, f in vars(ops).items() if inspect.isfunction(f) and not n.startswith("_")]
    return sorted(str(n) for n in names)


def _op(name: str) -> Callable[..., Any]:
    from .. import ops
    names = _op_names()
    if name not in names:
        raise UsageError(f"unknown op {name!r}." + did_you_mean(name, names)
                         + f" Ops: {', '.join(names)}; or 'model NAME'.")
    func: Callable[..., Any] = getattr(ops, name)
    return func


def _model(name: str) -> Any:
    from .. import models

    load = getattr(models, "load", None)
    if load is None:  # pragma: no cover - a package without the models catalog
        raise UsageError("this installation has no model catalog")
    return load(name)


def _model_names() -> list[str]:
    try:
        from .. import models

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
            pre = Parser(add_help=False, prog=f"{PROG} {command} model {self.title}")
            pre.add_argument("--phase", choices=phases, default=phases[0] if phases else None)
            known, _ = pre.parse_known_args(rest)
            self.phase = known.phase
            self.model = model
            self.phases = phases
            # --help without --phase shows every phase's options, not the default phase's
            self.every_phase = any(a in ("-h", "--help") for a in rest) and not any(
                a == "--phase" or a.startswith("--phase=") for a in rest)
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
        text = "\n".join(part for line in text.split("\n")
                         for part in wrap_line(line, terminal_width()))
        print(text, file=sys.stdout if full else sys.stderr)
        raise SystemExit(EXIT_OK if full else EXIT_USAGE)

    def parser(self, command: str, skip: Sequence[str] = (),
               swept: str | None = None) -> argparse.ArgumentParser:
        doc = inspect.getdoc(self.func) or ""
        parser = Parser(
            prog=f"{PROG} {command} {self.kind}" + (f" {self.title}" if self.phase else ""),
            description=doc.split("\n\n")[0], parents=[common_options()])
        if self.phase is not None:
            parser.add_argument("--phase", default=self.phase, help="the model phase")
        analysis_options(parser)
        self.params = add_signature_options(parser, self.func, skip, swept=swept)
        if self.phase is not None and getattr(self, "every_phase", False):
            shown = set(self.params)
            for phase in self.phases:
                if phase == self.phase:
                    continue
                group = parser.add_argument_group(
                    f"options of --phase {phase}, beside those above")
                shown.update(add_signature_options(
                    group, getattr(self.model, phase), [*skip, *shown],  # type: ignore[arg-type]
                    phase=phase))
        return parser


def _verdict_hint(workload: Any, chip: Any, regime: str, settings: dict[str, Any]) -> str | None:
    from ..engine.sweeps import knob_hint

    other = "compute" if regime != "compute" else "memory"
    try:
        return knob_hint(workload, chip, other, **settings)
    except RooflineError:
        return None


def _fmt(value: Any, unit: str) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    if unit == "s":
        return format_time(float(value))
    if unit == "FLOP/B":
        return rules.format_number(float(value))
    return si(float(value), unit)


def _fits(value: Any) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def cmd_analyze(argv: Sequence[str]) -> int:
    from ..engine.analysis import analyze
    from ..engine.breakdown import format_breakdown

    target = _Target("analyze", argv)
    args = target.parser("analyze").parse_args(target.rest)
    register_specs(args.spec)
    fit_to(width_of(args))
    values = {n: getattr(args, n) for n in target.params if hasattr(args, n)}
    workload = call_with(target.func, values)
    settings = analysis_settings(args)
    results = [(chip, analyze(workload, chip, **settings)) for chip in chips(args.hw)]
    hints = {r.hw: _verdict_hint(workload, chip, r.regime, settings) for chip, r in results}
    if args.json:
        # each result's record figures, then what only this command shows
        out: list[dict[str, Any]] = [
            {**r.to_dict(), "hint": hints[r.hw], "shares_s": dict(r.shares),
             "kernels": [_kernel_dict(k) for k in r.kernels]}
            for _, r in results]
        print_json({"target": target.label, "workload": workload.name, "results": out})
        return EXIT_OK
    echo(f"{workload.name}: {_fmt(workload.flops, 'FLOP')}, {_fmt(workload.bytes, 'B')}, "
          f"workload intensity {_fmt(workload.intensity, 'FLOP/B')} FLOP/B"
          + (f", footprint {_fmt(workload.footprint, 'B')}" if workload.footprint else ""))
    echo()
    rows = [[r.hw, r.dtype, _fmt(r.intensity, "FLOP/B"), _fmt(r.ridge, "FLOP/B"), r.regime,
             _fmt(r.time, "s"), _fmt(r.attainable, "FLOP/s"), _fits(r.fits)]
            for _, r in results]
    echo(render_table(["chip", "dtype", "DRAM FLOP/B", "ridge", "regime", "time",
                       "attainable", "fits"], rows, align="llrrlrrl"))
    if any(r.workload_intensity != r.intensity for _, r in results):
        echo("  DRAM FLOP/B: after the chip's on-chip memory keeps the handoffs it holds; the "
             "workload intensity is over all tensor traffic")
    for _, r in results:
        if hints[r.hw]:
            echo(f"  {r.hw}: {r.regime}-bound; {hints[r.hw]}")
    for _, r in results:
        if len(r.kernels) > 1:
            echo(f"\nbreakdown on {r.hw} ({r.dtype}):")
            echo("\n".join(format_breakdown(r, sort=False, width=common.WIDTH)))
    return EXIT_OK


def _kernel_dict(kernel: Any) -> dict[str, Any]:
    return {"name": kernel.name, "count": kernel.count, "flops": kernel.flops,
            "bytes": kernel.bytes, "link_bytes": kernel.link_bytes,
            "intensity": kernel.intensity, "peak": kernel.peak_label, "regime": kernel.regime,
            "time_s": kernel.time, "share": kernel.share}


def parse_range(text: str) -> tuple[int, int]:
    """``"1:4096"`` -> ``(1, 4096)``: whole numbers, 0 <= low <= high, both inclusive."""
    match = re.match(r"^\s*([+-]?\d+)\s*:\s*([+-]?\d+)\s*$", text)
    if not match:
        raise UsageError(f"--range {text!r}: expected LOW:HIGH, two whole numbers, e.g. 1:4096")
    lo, hi = int(match.group(1)), int(match.group(2))
    if lo < 0:
        raise UsageError(f"--range {text!r}: LOW is {lo}; a size cannot be negative: expected "
                         f"0 <= LOW <= HIGH, e.g. 1:4096")
    if lo > hi:
        raise UsageError(f"--range {text!r}: LOW {lo} is above HIGH {hi}; expected "
                         f"LOW <= HIGH, e.g. 1:4096")
    return lo, hi


def _attached(argv: Sequence[str], option: str) -> list[str]:
    """``--range -5:10`` as ``--range=-5:10``: argparse reads a value starting with '-' as
    an option, and would answer with its usage instead of what is wrong with the value."""
    out: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == option:
            value = next(args, None)
            out.append(arg if value is None else f"{arg}={value}")
        else:
            out.append(arg)
    return out


def _is_size(param: inspect.Parameter) -> bool:
    """A parameter a sweep can step through: a whole-number size, not a precision or a flag."""
    default = param.default
    if param.name.endswith("dtype") or "str" in str(param.annotation):
        return False
    return default in (inspect.Parameter.empty, None) or (
        isinstance(default, int) and not isinstance(default, bool))


def regime_segments(regime_at: Callable[[int], str], lo: int, hi: int,
                    samples: int = 257) -> list[tuple[int, int, str]]:
    """``[(first, last, regime), ...]`` covering [lo, hi]: where the regime holds.

    Samples the range (every value when it is small, else geometrically), then finds each
    change exactly by bisection between the samples that straddle it.
    """
    from ..engine.sweeps import last_true

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


def cmd_sweep(argv: Sequence[str]) -> int:
    from ..engine.analysis import analyze

    target = _Target("sweep", argv)
    target.rest = _attached(target.rest, "--range")
    pre = Parser(add_help=False, prog=f"{PROG} sweep")
    pre.add_argument("--param")
    known, _ = pre.parse_known_args(target.rest)
    parser = target.parser("sweep", skip=(), swept=known.param)
    parser.add_argument("--param", required=True, help="the parameter to sweep")
    parser.add_argument("--range", dest="span", required=True, metavar="LOW:HIGH",
                        help="inclusive range of whole numbers, e.g. 1:4096")
    args = parser.parse_args(target.rest)
    register_specs(args.spec)
    fit_to(width_of(args))
    signature = inspect.signature(target.func).parameters
    sizes = [n for n in target.params if _is_size(signature[n])]
    if args.param not in sizes:
        what = (f"is not a size of {target.label}: a sweep steps through whole numbers"
                if args.param in target.params else f"{target.label} has no such parameter")
        raise UsageError(f"--param {args.param!r}: {what}."
                         + did_you_mean(args.param, sizes)
                         + f" Sizes to sweep: {', '.join(sizes)}")
    if hasattr(args, args.param):
        flag = "--" + args.param.replace("_", "-")
        raise UsageError(f"{flag} {getattr(args, args.param)!r} and --param {args.param}: the "
                         f"swept parameter takes its values from --range; drop {flag}")
    lo, hi = parse_range(args.span)
    values = {n: getattr(args, n) for n in target.params if hasattr(args, n)}
    settings = analysis_settings(args)
    report = []
    for chip in chips(args.hw):
        def regime_at(x: int, chip: Any = chip) -> str:
            workload = call_with(target.func, {**values, args.param: x})
            return str(analyze(workload, chip, **settings).regime)

        def fits_at(x: int, chip: Any = chip) -> bool:
            workload = call_with(target.func, {**values, args.param: x})
            return bool(analyze(workload, chip, **settings).fits)

        segments = regime_segments(regime_at, lo, hi)
        sample = analyze(call_with(target.func, {**values, args.param: lo}), chip, **settings)
        report.append({
            "hw": chip.name, "dtype": sample.dtype, "ridge": sample.ridge,
            "param": args.param, "range": [lo, hi],
            "segments": [{"from": a, "to": b, "regime": r} for a, b, r in segments],
            "changes": [{"at": segments[i + 1][0], "from": segments[i][2],
                         "to": segments[i + 1][2]} for i in range(len(segments) - 1)],
            "capacity_B": sample.capacity, "fits_up_to": _fits_up_to(sample, fits_at, lo, hi),
        })
    if args.json:
        print_json({"target": target.label, "results": report})
        return EXIT_OK
    fixed = ", ".join(f"{k}={v}" for k, v in values.items() if k != args.param)
    echo(f"{target.label}({args.param}={lo}..{hi}" + (f", {fixed}" if fixed else "") + ")")
    for item in report:
        echo(f"\n{item['hw']} ({item['dtype']}, ridge {rules.format_number(item['ridge'])} "
              f"FLOP/B):")
        for seg in item["segments"]:
            echo(f"  {args.param} {seg['from']}..{seg['to']}: {seg['regime']}-bound")
        limit = item["fits_up_to"]
        if item["changes"]:
            for change in item["changes"]:
                beyond = (" (beyond the memory: not reachable on one chip)"
                          if limit is not None and change["at"] > limit else "")
                echo(f"  regime changes at {args.param} = {change['at']} "
                      f"({change['from']} -> {change['to']}){beyond}")
        else:
            echo(f"  no regime change in {args.param} {lo}..{hi}")
        echo(_capacity_line(args.param, lo, hi, limit, item["capacity_B"]))
    return EXIT_OK


def _fits_up_to(sample: Any, fits_at: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """The largest value in [lo, hi] whose footprint fits the chip's memory (footprints grow
    with sizes); hi when all fit, lo - 1 when none does, None when no footprint is known."""
    from ..engine.sweeps import last_true

    if sample.fits is None:
        return None
    if not sample.fits:
        return lo - 1
    if fits_at(hi):
        return hi
    return last_true(fits_at, lo, hi)


def _capacity_line(param: str, lo: int, hi: int, limit: int | None, capacity: float) -> str:
    memory = si(capacity, "B")
    if limit is None:
        return "  footprint unknown: no fit check"
    if limit >= hi:
        return f"  the footprint fits in {memory} across {param} {lo}..{hi}"
    if limit < lo:
        return (f"  the footprint does not fit in {memory} anywhere in {param} {lo}..{hi}: "
                f"the figures above need more than one chip's memory")
    return (f"  the footprint fits in {memory} up to {param} = {limit}; from {param} = "
            f"{limit + 1} it does not fit (needs more than one chip's memory)")


