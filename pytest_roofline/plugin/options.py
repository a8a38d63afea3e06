"""Registering ``--roofline-*`` options with their ``roofline_*`` ini twins, and reading them.

Options are declared as rows of ``(option, argparse keywords, ini type, help)`` and
registered here, in the "roofline" group: the plugin's own and those of
baselines and reports (below, registered by the hooks too, so that the ``gate`` module is
imported only by a session that uses one). The command line beats the ini file.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from ..report.defaults import BASELINE_FOLDER, BASELINE_NAME, RULES_HELP

Option = tuple[str, Mapping[str, Any], str, str]

#: The ``roofline`` marker's line in ``pytest --markers``: written out, so that registering
#: it imports nothing (a test checks it against ``signature.signature_text()``).
MARKER_HELP = (
    "roofline(hw=None, regime=None, *, workload=None, flops=None, bytes=None, "
    "link_bytes=None, footprint=None, dtype=None, sparse=False, min_intensity=None, "
    "max_intensity=None, max_time=None, fits=None, margin=None, min_efficiency=None, "
    "trace=False, cross_check=None, optional_hw=None, strict=False, "
    "min_kernel_efficiency=None, allow_faster=False): analyze the test's workload "
    "(workload=, flops=/bytes=, or roofline.add() through the fixture) on each chip in hw "
    "(default: --roofline-hw) after the test body passes, and fail the test when an "
    "expectation does not hold: regime ('compute', 'memory', 'network' or a list of allowed "
    "ones), min_intensity/max_intensity (FLOP/B), max_time (roofline time bound, e.g. "
    "'2 ms'), fits (the footprint fits the chip's memory), margin (relative band around the "
    "ridge where a regime assertion is too close to call), min_efficiency (roofline time over "
    "the time measured with roofline.measure(), e.g. 0.5; measured figures are otherwise "
    "only reported). trace=True records the torch ops the test body runs as its workload "
    "(tensor factories, RNG fills and reference comparisons left out), trace=fn (or a list "
    "of functions and modules) only the calls of those; strict=True fails a test whose "
    "trace holds an op without a formula; "
    "cross_check=0.02 asks a declared and a traced workload to agree within 2% per kernel "
    "family. A chip that cannot price the workload (a precision it lacks) gets an error row "
    "and fails the test; optional_hw=True (or names of chips in hw) reports it as skipped "
    "instead. min_kernel_efficiency (a fraction, or kernel-name patterns to fractions) "
    "asserts each kernel of the calls profiled with roofline.profile() reaches that share "
    "of its roof; a kernel faster than its bound fails the test unless allow_faster=True. "
    "Without expectations the figures are only reported."
)


def marker_help(width: int) -> str:
    """:data:`MARKER_HELP` as ``pytest --markers`` prints it (``@pytest.mark.`` + the text
    up to its first colon, the signature; a space; the rest, the description) in *width*
    columns: the signature's lines aligned after its parenthesis, the description following
    it and continued 4 in. pytest reads the name from the signature up to its parenthesis,
    as it does from the one-line text."""
    from ..text_table import wrap_line

    prefix = "@pytest.mark."
    signature, description = MARKER_HELP.split(": ", 1)
    head = wrap_line(f"{prefix}{signature}:", width, hang=len(prefix) + signature.index("(") + 1)
    last = head.pop()
    tail = textwrap.wrap(description, width, initial_indent=" " * (len(last) + 1),
                         subsequent_indent="    ", break_long_words=False,
                         break_on_hyphens=False)
    tail[0] = f"{last} {tail[0].lstrip()}"
    return "\n".join([*head, *tail])[len(prefix):]


#: The plugin's own options (:mod:`.hooks` registers them with :data:`GATE_OPTIONS`).
ROOFLINE_OPTIONS: tuple[Option, ...] = (
    # (option, argparse keywords, ini type, help)
    ("--roofline-hw", {"metavar": "NAME", "action": "append"}, "args",
     "default chip(s) for roofline tests whose marker names none: a name, alias or spec "
     "path; repeat the option or separate with commas. The marker's hw= wins."),
    ("--roofline-specs", {"metavar": "PATH", "action": "append"}, "paths",
     "extra hardware spec file (*.yaml) or folder of them; repeatable."),
    ("--roofline-flops-per-mac", {"metavar": "{1,2}"}, "string",
     "FLOPs counted per multiply-accumulate: 2 (default, the vendors' convention) or 1; "
     "halves intensities and ridges alike."),
    ("--roofline-derate", {"metavar": "FRACTION"}, "string",
     "fraction of every roof (compute, memory, links) taken as reachable, in (0, 1]; "
     "default 1."),
    ("--roofline-margin", {"metavar": "FRACTION"}, "string",
     "default too-close-to-call band of regime assertions, e.g. 0.1 or 10%; default 0."),
    ("--roofline-json", {"metavar": "PATH"}, "string",
     "write a JSON report of every roofline result to PATH (one file, by the controller)."),
    ("--roofline-summary", {"metavar": "MODE"}, "string",
     "terminal summary rows: auto (default: all rows up to 50, failures only beyond), all "
     "(failures first), failed, none."),
)


_INI_DEFAULTS = {"args": [], "paths": [], "bool": False}

#: The options of baselines and reports (:mod:`pytest_roofline.plugin.gate`, which is
#: imported and registered only when one of them is given).
GATE_OPTIONS: tuple[Option, ...] = (
    # (option, argparse keywords, ini type, help)
    ("--roofline-save", {"nargs": "?", "const": BASELINE_NAME, "metavar": "NAME"},
     "string", f"save this run's roofline results as baseline NAME (default "
               f"{BASELINE_NAME!r}) in the storage folder, atomically."),
    ("--roofline-compare", {"nargs": "?", "const": BASELINE_NAME, "metavar": "NAME"},
     "string", "compare this run against baseline NAME (default "
               f"{BASELINE_NAME!r}) or a report file PATH.json; a regression fails "
               "its test."),
    ("--roofline-compare-fail", {"action": "append", "metavar": "RULE"}, "args", RULES_HELP),
    ("--roofline-compare-missing", {"metavar": "{warn,error}"}, "string",
     "what a missing baseline does: warn (default) or error (before any test runs)."),
    ("--roofline-storage", {"metavar": "DIR"}, "string",
     f"folder of named baselines (default: {BASELINE_FOLDER} in the rootdir)."),
    ("--roofline-md", {"metavar": "PATH"}, "string",
     "write a Markdown summary (regressions first, then the table) to PATH."),
    ("--roofline-github-summary", {"action": "store_true", "default": None}, "bool",
     "append the Markdown summary to the file named by $GITHUB_STEP_SUMMARY, when set."),
    ("--roofline-plot", {"action": "append", "metavar": "PATH|term"}, "args",
     "draw the roofline chart: PATH.png / PATH.svg / PATH.pdf (needs the plot extra), or "
     "'term' for a chart in characters in the terminal summary; repeatable, every value "
     "applies."),
)


def given(config: pytest.Config, options: Iterable[Option]) -> bool:
    """Whether any of *options* is set, on the command line or in the ini file."""
    return any(pick(config, dest(option[0]))[0] for option in options)


def dest(option: str) -> str:
    """``--roofline-derate`` -> ``roofline_derate`` (the option's dest and its ini name)."""
    return option[2:].replace("-", "_")


def add_options(parser: pytest.Parser, options: Iterable[Option]) -> None:
    group = parser.getgroup("roofline", "roofline analysis (pytest-roofline)")
    for option, keywords, ini_type, text in options:
        name = dest(option)
        group.addoption(option, dest=name, **{"default": None, **keywords},
                        help=f"{text} (ini: {name})".replace("%", "%%"))
        parser.addini(name, help=text, type=ini_type,  # type: ignore[arg-type]
                      default=_INI_DEFAULTS.get(ini_type, ""))


def pick(config: pytest.Config, name: str) -> tuple[Any, bool]:
    """``(value, came from the command line)``: the option wins over its ini twin."""
    value = config.getoption(name)
    if value not in (None, []):
        return value, True
    return config.getini(name), False
