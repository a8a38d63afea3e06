"""What the subcommands share: exit codes, common options, output helpers."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from ..errors import RooflineError
from ..report import baseline, rules
from ..text_table import render, wrap_line

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
PROG = "pytest-roofline"
PHASES = ("decode", "prefill", "forward", "train_step")


class UsageError(RooflineError, ValueError):
    """A command line that cannot be run as written."""


class Parser(argparse.ArgumentParser):
    """argparse, with every error one line on stderr (no usage dump): the CLI's promise."""

    def error(self, message: str) -> NoReturn:
        from ..atomic import encodable

        print(encodable(f"{PROG}: error: {message} (see {self.prog} --help)",
                        sys.stderr.encoding or "utf-8"), file=sys.stderr)
        raise SystemExit(EXIT_USAGE)

    def format_usage(self) -> str:
        return fit_help(super().format_usage())

    def format_help(self) -> str:
        """argparse's help in the terminal's width: argparse wraps between the parts of the
        usage and the words of a help text, but leaves a part wider than a line (an option
        group of many alternatives) or an option's list of spellings as they are."""
        return fit_help(super().format_help())


def fit_help(text: str) -> str:
    """*text* with each line wider than the terminal wrapped, its indentation kept."""
    width = terminal_width()
    return "\n".join(part for line in text.split("\n") for part in wrap_line(line, width))


def one_line(text: str) -> str:
    """An error message on one line, however its parts were written."""
    return re.sub(r"\s*\n\s*", " ", text.strip())


def _setting(name: str, text: str) -> Any:
    """*text* as the plugin's option *name* takes it (``settings.check``), or argparse's
    error naming what is allowed."""
    from ..engine import settings

    try:
        return settings.check(name, text, text=True)
    except settings.BadSetting as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; expected {exc.allowed}"
                                         ) from None


def fraction(text: str) -> float:
    """``--derate``: ``0.7`` or ``70%``, in (0, 1], as the plugin's option takes it."""
    number: float = _setting("derate", text)
    return number


def flops_per_mac(text: str) -> int:
    """``--flops-per-mac``: 1 or 2, as the plugin's option takes it."""
    number: int = _setting("flops_per_mac", text)
    return number


def positive(text: str) -> int:
    """A count option (``--chips``, ``--top``): a whole number >= 1."""
    value = text.strip()
    if value.isdigit() and len(value) > 18:  # past any count or size: as many as there are
        return sys.maxsize
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text[:30]!r} is not allowed; expected a whole "
                                         f"number >= 1")
    return number


def terminal_width() -> int:
    """The columns of the terminal: ``COLUMNS`` when set, else the terminal's, else 80."""
    return max(shutil.get_terminal_size().columns, 40)


def wrap(text: str, width: int | None, indent: str = "", hang: str = "  ") -> str:
    """*text* in lines of at most *width* columns (as it is when None, under ``--wide``),
    the first indented by *indent*, the others by *indent* + *hang*, a URL or path longer
    than a line on a line of its own, whole (see
    :func:`pytest_roofline.text_table.wrap_line`)."""
    return "\n".join(wrap_line(indent + text, width, hang=len(hang)))


def add_wide_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wide", action="store_true",
                        help="one line a row and a sentence, however wide the terminal "
                             "(default: fit the terminal, COLUMNS)")


def width_of(args: argparse.Namespace) -> int | None:
    """The columns to fit: the terminal's, or None under ``--wide``."""
    return None if getattr(args, "wide", False) else terminal_width()



# -- shared option definitions ---------------------------------------------------------------


def add_rule_option(parser: argparse.ArgumentParser, *flags: str) -> None:
    """The compare-rule option (repeatable, every value kept), as the plugin defines it."""
    parser.add_argument(*(flags or ("--fail",)), dest="rules", action="append", default=[],
                        metavar="RULE", help=rules.HELP.replace("%", "%%"))


def add_storage_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--storage", metavar="DIR", default=baseline.DEFAULT_FOLDER,
                        help=f"folder of named baselines (default: {baseline.DEFAULT_FOLDER} "
                             f"in the current directory)")


def common_options() -> Parser:
    parent = Parser(add_help=False)
    parent.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_wide_option(parent)
    parent.add_argument("--spec", "--specs", dest="spec", action="append", default=[],
                        metavar="PATH",
                        help="a hardware spec file or folder of them to know (repeatable)")
    return parent


def analysis_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hw", required=True, metavar="CHIPS", action="append",
                        help="chips, comma-separated or the option repeated (names, aliases "
                             "or spec files); every one given is analyzed")
    parser.add_argument("--flops-per-mac", type=flops_per_mac, default=2, metavar="{1,2}",
                        help="FLOPs counted per multiply-accumulate (default 2)")
    parser.add_argument("--derate", type=fraction, default=1.0, metavar="FRACTION",
                        help="fraction of every roof reached, in (0, 1], e.g. 0.7 or 70%% "
                             "(default 1)")
    parser.add_argument("--sparse", action="store_true",
                        help="use the structured-sparse matrix peaks")


def analysis_settings(args: argparse.Namespace) -> dict[str, Any]:
    return {"flops_per_mac": args.flops_per_mac, "derate": args.derate, "sparse": args.sparse}


def register_specs(paths: Sequence[str]) -> None:
    from ..hardware import CATALOG

    for path in paths:
        CATALOG.register_path(path)


def chips(text: str | Sequence[str]) -> list[Any]:
    """The chips of ``--hw`` values (each comma-separated; the option may repeat), each once,
    in the order given."""
    from ..hardware import get_hardware

    values = [text] if isinstance(text, str) else list(text)
    names = [n.strip() for value in values for n in value.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--hw needs at least one chip name, got {', '.join(values)!r}")
    found: dict[str, Any] = {}
    for name in names:
        chip = get_hardware(name)
        found.setdefault(chip.name, chip)
    return list(found.values())


#: The columns every line the command prints fits in (None: as wide as it is, ``--wide``);
#: set by :func:`fit_to` before a command runs.
WIDTH: int | None = None


def fit_to(width: int | None) -> None:
    global WIDTH
    WIDTH = width


def echo(text: str = "", *, raw: bool = False) -> None:
    """Print to stdout, each line longer than :data:`WIDTH` wrapped (not *raw* text: JSON,
    CSV, Markdown source); a closed pipe (``| head``) silences the rest instead of failing,
    and a character the terminal's encoding cannot hold (a test id from a file name that is
    not UTF-8) is printed as its escape."""
    from ..atomic import encodable

    if not raw and WIDTH is not None and any(len(line) > WIDTH for line in text.split("\n")):
        text = "\n".join(part for line in text.split("\n") for part in wrap_line(line, WIDTH))
    try:
        print(encodable(text, sys.stdout.encoding or "utf-8"))
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def print_json(data: Any) -> None:
    echo(json.dumps(data, indent=2, default=jsonable, allow_nan=True), raw=True)


def jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "",
                 width: int | None = None, optional: Sequence[int] = ()) -> str:
    """A table; in *width* columns when given, leaving out the *optional* columns (in their
    order) where they do not fit, then each row's first cell on a line of its own."""
    width = WIDTH if width is None else width
    if width is None:
        return "\n".join(render(headers, rows, align=align))
    first = max([len(headers[0]), *(len(r[0]) for r in rows)])
    return "\n".join(render(headers, rows, align=align, width=width, optional=optional,
                            min_shrunk=first))


