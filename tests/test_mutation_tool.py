"""tools/mutate.py's choice of tests for a mutant (docs/mutation.md): the tests that run its
lines, every test for a line run at import, none for a line no test runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "mutate", Path(__file__).parents[1] / "tools" / "mutate.py")
assert spec is not None and spec.loader is not None
mutate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutate)

HITS = {3: ["t.py::a"], 4: ["t.py::b", "t.py::a"], 7: [""], 9: ["t.py::c"]}
GIVEN = ["t.py", "u.py"]


def test_a_mutant_runs_the_tests_that_run_its_lines_in_their_order() -> None:
    assert mutate.chosen((3, 3), HITS, GIVEN) == ["t.py::a"]
    assert mutate.chosen((3, 4), HITS, GIVEN) == ["t.py::a", "t.py::b"]


def test_a_line_run_at_import_runs_every_given_test() -> None:
    assert mutate.chosen((6, 7), HITS, GIVEN) == GIVEN


def test_a_line_no_test_runs_runs_nothing() -> None:
    assert mutate.chosen((5, 6), HITS, GIVEN) is None


def test_mutants_come_in_the_order_of_their_lines() -> None:
    source = "def f(x):\n    return x + 1\n\nLIMIT = 3 < 4\n"
    found = [(lines, what) for lines, what, _ in mutate.mutants(source)]
    assert found == [((2, 2), "x + 1  ->  x - 1"), ((2, 2), "1  ->  2"),
                     ((4, 4), "3 < 4  ->  3 <= 4"), ((4, 4), "3  ->  4"),
                     ((4, 4), "4  ->  5")]
