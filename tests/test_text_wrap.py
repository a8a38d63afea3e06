"""Fitting printed lines to the terminal: the hang of wrapped lines, and paths of every
length kept whole and read back whole."""

from __future__ import annotations

import pytest
from wrapped import WIDTH, unwrap

from pytest_roofline.text_table import wrap_line


@pytest.mark.parametrize("hang", [2, 4, 6])
@pytest.mark.parametrize("length", range(1, 2 * WIDTH))
def test_a_path_of_every_length_is_kept_whole_and_read_back(length: int, hang: int) -> None:
    """The line the plugin prints after writing a chart, under a temp folder of every length
    (pytest's is ``pytest-of-<user>/pytest-<n>`` under the system's temp folder, and its
    length changes as runs accumulate)."""
    path = "/" + "p" * (length - 1)
    line = f"roofline: plot written to {path}"
    lines = wrap_line(line, WIDTH, hang=hang)
    assert path in lines[-1].split()  # whole, never split
    for part in lines:  # past the width only where one word is longer than a line
        assert len(part) <= WIDTH or part.split() == [path]
    assert unwrap(lines, hangs=(hang,)) == [line]


def test_continuations_keep_their_hang_around_a_word_that_fits_only_without_it() -> None:
    """A path of 78 columns fits an 80-column line indented 2, not one indented 6: it takes a
    line of its own at the line's indentation, and the words after it are indented as
    continuations again (before, every continuation line lost its indentation)."""
    path = "/" + "q" * 77
    line = "  source: " + " ".join(["word"] * 20) + f" {path} " + " ".join(["tail"] * 20)
    lines = wrap_line(line, WIDTH, hang=4)
    own = lines.index("  " + path)
    assert own > 1
    assert lines[0].startswith("  source: ")
    for i, part in enumerate(lines[1:], start=1):
        assert len(part) <= WIDTH
        if i != own:
            assert part.startswith("      ") and not part.startswith("       "), part
    assert " ".join(" ".join(lines).split()) == " ".join(line.split())


def test_a_word_longer_than_any_line_keeps_the_hang() -> None:
    long = "/" + "r" * 120
    assert wrap_line(f"  see {long} for more", 40, hang=2) == ["  see", f"    {long}",
                                                               "    for more"]


def test_short_lines_and_no_width_are_left_alone() -> None:
    assert wrap_line("  short", 80) == ["  short"]
    assert wrap_line("x " * 100, None) == ["x " * 100]
    assert wrap_line("    ", 2) == ["    "]


def test_hw_show_keeps_each_sources_continuations_under_it(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns a source whose URL fits only without the hang kept every later line of
    it at the entries' own indentation, where it read as a new entry."""
    import re

    from pytest_roofline.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["hw", "show", "h100"]) == 0
    lines = capsys.readouterr().out.split("sources:\n", 1)[1].splitlines()
    for line in lines:
        if line.startswith("  ") and not line.startswith("   "):  # an entry's own indentation
            assert re.match(r"  \w+: ", line) or (len(line.split()) == 1 and "/" in line), line

