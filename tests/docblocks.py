"""Reading the fenced code blocks of the documentation, and matching shown output to real output.

A block is found by its file and its first non-blank line (its key). Shown output matches real
output when, with runs of whitespace taken as one space (the docs wrap long lines), every
shown character appears in order (a command line's output, which the docs never wrap, is
compared space for space: ``exact=True``, so that a column that drifts fails): ``...``
stands for any text, and with ``timings=True`` every number stands for any number and every
unit of time for any unit of time (figures measured on the machine that runs the test: a
bound shown as "20.7 us" may print "777 ns" there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", "docs/*.md", "specs/*/README.md")
KEY = 60  # characters of the first line that name a block
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its info string and its text (indentation removed)."""

    path: str
    line: int
    lang: str
    text: str

    @property
    def key(self) -> tuple[str, str]:
        first = next(line.strip() for line in self.text.splitlines() if line.strip())
        return self.path, first[:KEY]

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def blocks() -> list[Block]:
    """Every fenced block of the documents, in file order."""
    found: list[Block] = []
    for pattern in DOCUMENTS:
        for path in sorted(ROOT.glob(pattern)):
            lines = path.read_text().splitlines()
            i = 0
            while i < len(lines):
                fence = FENCE.match(lines[i])
                if fence is None:
                    i += 1
                    continue
                indent = len(fence.group(1))
                j = i + 1
                while not lines[j].strip().startswith("```"):
                    j += 1
                body = "\n".join(line[indent:] for line in lines[i + 1:j])
                found.append(Block(path=str(path.relative_to(ROOT)), line=i + 1,
                                   lang=fence.group(2), text=body + "\n"))
                i = j + 1
    return found


NUMBER = r"[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"
#: A unit of time as ``units.format_time`` prints it, with what may follow it in a sentence.
TIME_UNIT = re.compile(r"(ns|us|µs|ms|s)([),.:;]*)")
ANY_TIME_UNIT = r"(?:ns|us|µs|ms|s)"


def pattern(shown: str, *, timings: bool = False, exact: bool = False) -> re.Pattern[str]:
    """The regular expression that real output must contain for ``shown`` to hold; with
    *exact*, its spaces and line breaks too (a column that drifts fails), lines compared
    without their trailing spaces."""
    parts: list[str] = []
    if exact:
        shown = "\n".join(line.rstrip() for line in shown.strip("\n").splitlines())
    for token in re.split(r"(\.\.\.|\s+)", shown if exact else shown.strip()):
        if not token:
            continue
        if token == "...":
            parts.append(r".*?")
        elif token.isspace():
            parts.append(re.escape(token) if exact else r"\s+")
        elif timings and TIME_UNIT.fullmatch(token):
            parts.append(ANY_TIME_UNIT + re.escape(TIME_UNIT.fullmatch(token)[2]))  # type: ignore[index]
        elif timings:
            pieces = re.split(f"({NUMBER})", token)
            parts.append("".join(NUMBER if k % 2 else re.escape(p) for k, p in enumerate(pieces)))
        else:
            parts.append(re.escape(token))
    # "x ... y" with spaces around the wildcard must also match "x y".
    text = "".join(parts)
    if not exact:
        text = text.replace(r"\s+.*?\s+", r"(?:\s+.*?\s+|\s+)")
    return re.compile(text, re.DOTALL)


def assert_shown(shown: str, real: str, *, timings: bool = False, whole: bool = False,
                 exact: bool = False) -> None:
    """Fail, with both texts, unless ``real`` holds ``shown`` (from its start if ``whole``;
    with ``exact``, space for space: see :func:`pattern`)."""
    expression = pattern(shown, timings=timings, exact=exact)
    if exact:
        real = "\n".join(line.rstrip() for line in real.strip("\n").splitlines())
    found = expression.match(real) if whole else expression.search(real)
    if found is None:
        # Name the first shown line that no longer matches, for a readable failure.
        bad = next((line for line in shown.splitlines()
                    if line.strip() and line.strip() != "..."
                    and not pattern(line, timings=timings, exact=exact).search(real)), None)
        raise AssertionError(f"shown output does not match real output\n--- first shown line "
                             f"not found:\n{bad}\n--- shown:\n{shown}\n--- real:\n{real}")


def commands(text: str) -> list[tuple[list[str], str]]:
    """``$ command`` lines (with ``\\`` continuations) and the output shown under each."""
    import shlex

    runs: list[tuple[list[str], str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        command = lines[i][2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        i += 1
        out: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        runs.append((shlex.split(command), "\n".join(out).strip()))
    return runs
