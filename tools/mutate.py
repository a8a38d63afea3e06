"""One-line mutation testing of a rule module against the tests that should catch a change.

    python tools/mutate.py pytest_roofline/efficiency.py tests/test_efficiency.py [...]

Every mutant is the module with one change: a number ``n`` made ``n + 1`` (``0`` and ``1``
included), a comparison flipped (``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``,
``in`` and ``not in``), an arithmetic operator swapped (``+`` and ``-``, ``*`` and ``/``,
``//`` to ``/``, ``**`` to ``*``, ``%`` to ``*``), ``and`` and ``or``, ``True`` and
``False``, a ``not`` dropped, ``min`` and ``max``. Module-level tables and constants are
mutated too (the collectives' and the families' rows), unlike tools that mutate function
bodies only; docstrings, strings and annotations are not. A mutant is *killed* when the
given tests fail on it (or error, or exceed the time limit), and *survives* when they pass.

The module is rewritten in place in a copy of the package (a temporary folder; the checkout
is never touched) and the tests run in a forked child of a process that has imported the
third-party dependencies once, so a mutant costs the tests' own time. Prints each survivor
(line, the original line and the mutated one) and the figures: killed / total.
Documented in docs/mutation.md; not part of CI (minutes of CPU).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
           ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
           ast.Is: ast.IsNot, ast.IsNot: ast.Is}
ARITHMETIC = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
              ast.FloorDiv: ast.Div, ast.Pow: ast.Mult, ast.Mod: ast.Mult}
SWAPPED_NAMES = {"min": "max", "max": "min"}
#: More arguments for every pytest run (``--deselect`` of tests that time this machine).
PYTEST_ARGS: list[str] = []


def _skipped(tree: ast.Module) -> set[int]:
    """ids of nodes never mutated: docstrings, annotations, ``__future__`` imports."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        for field in ("annotation", "returns"):
            sub = getattr(node, field, None)
            if isinstance(sub, ast.AST):
                skip.update(id(n) for n in ast.walk(sub))
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            skip.update(id(n) for n in ast.walk(body[0]))
        if isinstance(node, ast.JoinedStr):  # an f-string: a message, not a rule
            skip.update(id(n) for n in ast.walk(node))
    return skip


def sites(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    """Every (node, kind) that can be mutated, in a fixed order."""
    skip = _skipped(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            yield node, "number"
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            yield node, "bool"
        elif isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in COMPARE:
                    yield node, f"compare:{i}"
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in ARITHMETIC:
            yield node, "arithmetic"
        elif isinstance(node, ast.BoolOp):
            yield node, "boolean"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "not"
        elif isinstance(node, ast.Name) and node.id in SWAPPED_NAMES and \
                isinstance(node.ctx, ast.Load):
            yield node, "name"


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, kind: str) -> None:
        self.target, self.kind = target, kind

    def visit(self, node: ast.AST) -> ast.AST:
        if node is not self.target:
            return self.generic_visit(node)
        new = copy.copy(node)
        kind = self.kind
        if kind == "number":
            new.value = node.value + 1  # type: ignore[attr-defined]
        elif kind == "bool":
            new.value = not node.value  # type: ignore[attr-defined]
        elif kind.startswith("compare:"):
            i = int(kind.split(":")[1])
            ops = list(node.ops)  # type: ignore[attr-defined]
            ops[i] = COMPARE[type(ops[i])]()
            new.ops = ops  # type: ignore[attr-defined]
        elif kind == "arithmetic":
            new.op = ARITHMETIC[type(node.op)]()  # type: ignore[attr-defined]
        elif kind == "boolean":
            new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()  # type: ignore[attr-defined]
        elif kind == "not":
            return node.operand  # type: ignore[attr-defined,no-any-return]
        elif kind == "name":
            new.id = SWAPPED_NAMES[node.id]  # type: ignore[attr-defined]
        return new


def mutants(source: str) -> Iterator[tuple[tuple[int, int], str, str]]:
    """((first line, last line), description, mutated module source) for every site of
    *source*, in the order of their lines."""
    tree = ast.parse(source)
    count = sum(1 for _ in sites(tree))
    order = sorted(range(count), key=lambda i: [getattr(n, "lineno", 0) for n, _ in
                                                sites(tree)][i])
    for index in order:
        tree = ast.parse(source)
        node, kind = list(sites(tree))[index]
        lines = (getattr(node, "lineno", 0), getattr(node, "end_lineno", 0) or 0)
        mutated = ast.fix_missing_locations(_Replace(node, kind).visit(tree))
        before = ast.unparse(node)
        alone = copy.deepcopy(node)
        after = ast.unparse(_Replace(alone, kind).visit(alone))
        yield lines, f"{before}  ->  {after}", ast.unparse(mutated)


def covering(tests: list[str], module: Path) -> dict[int, list[str]]:
    """line -> the ids of the tests that run it ('' for import time), from one run of
    *tests* with a line tracer on *module* alone (in a forked child, as the mutants' runs)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        import threading

        import pytest

        target, current = str(module), [""]
        hits: dict[int, dict[str, None]] = {}

        def local(frame: Any, event: str, arg: Any) -> Any:
            if event == "line":
                hits.setdefault(frame.f_lineno, {})[current[0]] = None
            return local

        def calls(frame: Any, event: str, arg: Any) -> Any:
            if frame.f_code.co_filename != target:
                return None
            hits.setdefault(frame.f_lineno, {})[current[0]] = None
            return local

        failed: list[str] = []

        class Tests:
            def pytest_runtest_logreport(self, report: Any) -> None:
                if report.failed:
                    failed.append(report.nodeid)

            @pytest.hookimpl(wrapper=True)
            def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
                current[0] = item.nodeid
                try:
                    return (yield)
                finally:
                    current[0] = ""

        sys.settrace(calls)
        threading.settrace(calls)
        code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", *PYTEST_ARGS,
                            *tests],
                           plugins=[Tests()])
        sys.settrace(None)
        with os.fdopen(write, "w") as out:
            json.dump({"code": int(code), "failed": failed,
                       "hits": {line: list(ids) for line, ids in hits.items()}}, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as result:
        found = json.load(result)
    os.waitpid(pid, 0)
    if found["code"] != 0:
        raise SystemExit(f"the tests fail unmutated (exit {found['code']}): "
                         f"{', '.join(found['failed'][:5]) or 'none ran'}")
    return {int(line): ids for line, ids in found["hits"].items()}


def chosen(node_lines: tuple[int, int], hits: dict[int, list[str]],
           tests: list[str]) -> list[str] | None:
    """The tests a mutant on *node_lines* (first, last) needs: those that run one of those
    lines; every given test when one runs at import (a table, a default); None when none
    runs them (the mutant survives unseen)."""
    ids: dict[str, None] = {}
    for line in range(node_lines[0], node_lines[1] + 1):
        ids.update(dict.fromkeys(hits.get(line, ())))
    if "" in ids:
        return tests
    return list(ids) or None


def run_tests(tests: list[str], timeout: float) -> str:
    """'killed', 'survived' or 'timeout': the tests run in a forked child."""
    pid = os.fork()
    if pid == 0:  # the child: fresh imports of the package, from the mutated copy
        sys.pycache_prefix = tempfile.mkdtemp()  # never a cached compile of another mutant
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        import pytest

        code = pytest.main(["-q", "-x", "-p", "no:cacheprovider", "-p", "no:randomly",
                            *PYTEST_ARGS, *tests])
        os._exit(int(code))
    start = time.monotonic()
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return "survived" if os.waitstatus_to_exitcode(status) == 0 else "killed"
        if time.monotonic() - start > timeout:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return "timeout"
        time.sleep(0.02)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", help="the module to mutate, e.g. pytest_roofline/efficiency.py")
    parser.add_argument("tests", nargs="+", help="the test files (or node ids) to run")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds a mutant's tests may take (then killed: a hang)")
    parser.add_argument("--lines", help="only mutants on these lines, e.g. 40-90,112,130")
    parser.add_argument("--every-test", dest="by_line", action="store_false",
                        help="run every given test on each mutant (default: only the tests "
                             "that run its line, found by one traced run; every given test "
                             "for a line run at import)")
    parser.add_argument("--deselect", metavar="NODEID", action="append", default=[],
                        help="leave out this test (repeatable): one that times this machine "
                             "and fails when the line tracer slows it")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print every mutant's outcome, not only the survivors")
    args = parser.parse_args(argv)
    PYTEST_ARGS[:] = [f"--deselect={node}" for node in args.deselect]
    work = Path(tempfile.mkdtemp(prefix="mutate-"))
    try:
        shutil.copytree(ROOT / "pytest_roofline", work / "pytest_roofline",
                        ignore=shutil.ignore_patterns("__pycache__"))
        (work / "tests").mkdir()
        for item in (ROOT / "tests").iterdir():
            target = work / "tests" / item.name
            if item.is_dir():
                target.symlink_to(item)   # data folders: read only
            elif item.suffix == ".py":
                shutil.copy2(item, target)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, work / name)
        os.chdir(work)
        sys.path.insert(0, str(work / "tests"))
        sys.path.insert(0, str(work))
        os.environ["PYTHONPATH"] = os.pathsep.join([str(work), os.environ.get(
            "PYTHONPATH", "")])
        sys.dont_write_bytecode = True
        # the third-party dependencies, imported once (each child inherits them)
        import numpy  # noqa: F401
        import pint  # noqa: F401
        import pytest  # noqa: F401
        import yaml  # noqa: F401
        try:
            import hypothesis  # noqa: F401
            import torch  # noqa: F401
        except ImportError:
            pass
        path = work / args.module
        source = path.read_text()
        spans = [tuple(int(x) for x in (part.split("-") * 2)[:2])
                 for part in args.lines.split(",")] if args.lines else [(0, 10**9)]
        hits = covering(args.tests, path)  # also: the tests pass unmutated
        results: dict[str, int] = {"killed": 0, "survived": 0, "timeout": 0, "unrun": 0}
        for lines, what, mutated in mutants(source):
            line = lines[0]
            if not any(low <= line <= high for low, high in spans):
                continue
            tests = chosen(lines, hits, args.tests) if args.by_line else args.tests
            if tests is None:
                results["unrun"] += 1
                print(f"SURVIVED {args.module}:{line}: {what}  (no given test runs it)",
                      flush=True)
                continue
            path.write_text(mutated)
            outcome = run_tests(tests, args.timeout)
            results[outcome] += 1
            if outcome == "survived":
                print(f"SURVIVED {args.module}:{line}: {what}", flush=True)
            elif args.verbose:
                print(f"{outcome} {args.module}:{line}: {what} ({len(tests)} tests)",
                      flush=True)
        path.write_text(source)
        total = sum(results.values())
        killed = results["killed"] + results["timeout"]
        print(f"{args.module}: {killed} killed of {total} mutants "
              f"({results['timeout']} by the time limit), "
              f"{results['survived'] + results['unrun']} survived "
              f"({results['unrun']} on lines no given test runs)", flush=True)
        return 0
    finally:
        os.chdir(ROOT)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
