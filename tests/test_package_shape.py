"""The package's shape: no import circle, and the plugin on pytest's public API only."""

from __future__ import annotations

import re
from pathlib import Path

import grimp
import pytest

import pytest_roofline

PACKAGE = Path(pytest_roofline.__file__).parent

#: Names the plugin gives pytest's objects (hook arguments, locals).
PYTEST_OBJECTS = ("item", "items", "config", "early_config", "request", "node", "session",
                  "report", "collector", "pluginmanager", "manager", "parser",
                  "terminalreporter", "reporter", "capture", "call", "excinfo", "entry",
                  "stash", "pytester", "mark", "marks", "metafunc")
PRIVATE_ACCESS = re.compile(r"\b(" + "|".join(PYTEST_OBJECTS) + r")\._[A-Za-z]")
PRIVATE_GETATTR = re.compile(r"getattr\([^,()]+,\s*[\"']_[A-Za-z]")


def test_the_import_graph_has_no_circle() -> None:
    """Every import, lazy ones included (what grimp finds in function bodies too)."""
    graph = grimp.build_graph("pytest_roofline")
    modules = sorted(graph.modules)
    for module in modules:
        for other in graph.find_modules_directly_imported_by(module):
            if other.startswith("pytest_roofline") and other != module:
                assert not graph.chain_exists(importer=other, imported=module), (
                    f"{module} and {other} import each other: "
                    f"{graph.find_shortest_chain(importer=other, imported=module)}")


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _pytest_modules() -> list[Path]:
    """The modules that import pytest (the plugin's)."""
    return [p for p in _sources()
            if re.search(r"^\s*import pytest$", p.read_text(encoding="utf-8"), re.M)]


def test_the_plugin_modules_are_found() -> None:
    assert {p.name for p in _pytest_modules()} >= {"hooks.py", "runner.py", "gate.py"}


@pytest.mark.parametrize("path", _pytest_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_pytest_attribute_is_used(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "_pytest" not in re.sub(r"#.*", "", text).replace("pytest_", ""), \
        f"{path.name} names pytest's private package"
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        assert not PRIVATE_ACCESS.search(code), f"{path.name}:{number}: {line.strip()}"
        assert not PRIVATE_GETATTR.search(code), f"{path.name}:{number}: {line.strip()}"


@pytest.mark.parametrize("path", _pytest_modules() + sorted((PACKAGE / "plugin").glob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_test_function_argument_is_swapped(path: Path) -> None:
    """``item.funcargs`` is not in pytest's reference: what a test receives is the fixtures'
    values, never one the plugin put there (pytest-benchmark's fixture is watched through
    its own class instead, plugin/benchmark.py)."""
    code = re.sub(r"#.*", "", path.read_text(encoding="utf-8"))
    assert not re.search(r"\bfuncargs\b", code), path.name


def test_the_check_finds_a_private_access() -> None:
    """The patterns above catch what the plugin once did (so that the test can fail)."""
    assert PRIVATE_ACCESS.search('info = item._fixtureinfo')
    assert PRIVATE_GETATTR.search('info = getattr(item, "_fixtureinfo", None)')
    assert not PRIVATE_ACCESS.search("item.stash[KEY]")


def test_no_module_reassigns_its_class() -> None:
    for path in _sources():
        assert "__class__ =" not in path.read_text(encoding="utf-8"), path.name


def test_every_subpackage_is_installed() -> None:
    """A non-editable install holds the packages pyproject.toml lists, and no others."""
    import tomllib

    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(
        encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(PACKAGE.parent).parts)
             for p in PACKAGE.rglob("__init__.py")}
    assert found <= listed, f"not installed: {sorted(found - listed)}"


def test_every_module_imports_first_in_a_fresh_process() -> None:
    """Each module of the package can be the first one a process imports: an import circle
    that only bites in one order (``import pytest_roofline.hardware`` once failed so, through
    the package's lazy public names) fails here. One interpreter, the package's modules
    dropped from ``sys.modules`` before each import, so each starts from nothing."""
    import subprocess
    import sys

    code = """
import pkgutil, sys
import pytest_roofline
names = [m.name for m in pkgutil.walk_packages(pytest_roofline.__path__, "pytest_roofline.")]
failed = []
for name in ["pytest_roofline", *names]:
    for loaded in [m for m in sys.modules if m.split(".")[0] == "pytest_roofline"]:
        del sys.modules[loaded]
    try:
        __import__(name)
    except ImportError as exc:
        failed.append(f"{name}: {exc}")
print(len(names))
print("\\n".join(failed))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    count, *failed = out.stdout.strip().split("\n")
    assert int(count) > 80, out.stdout  # every module was tried
    assert not [f for f in failed if f], failed


MOST_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    """Short modules with one idea each: none of the package over 600 lines."""
    long = {str(p.relative_to(PACKAGE)): n for p in _sources()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MOST_LINES}
    assert not long, long


def test_a_lookup_does_not_depend_on_what_was_imported_before(host_cache: Path) -> None:
    """``pytest_roofline.hardware`` alone, in a fresh process (nothing of ``measuring``
    imported): ``host`` is known and resolves (from the cached calibration, so nothing is
    measured), and a time measured here is refused against a chip this machine is not.
    The catalog imports the packages of the ``pytest_roofline.resolvers`` entry-point group
    on the first miss, which register the resolvers."""
    import subprocess
    import sys

    code = """
import sys
from pytest_roofline.hardware import foreign_to_this_machine, get_hardware, is_dynamic
assert not any(m.startswith("pytest_roofline.measuring") for m in sys.modules)
assert is_dynamic("host") and not is_dynamic("h100")
assert foreign_to_this_machine(get_hardware("h100")) is not None
assert get_hardware("host").provenance["device"] == "cpu"
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=False)
    assert result.stdout.strip() == "ok", result.stderr


def test_the_package_root_is_imported_by_no_module_of_its_own() -> None:
    """The root imports every layer for its public names, so it sits on the top floor: a
    module of the package that imported it (for ``__version__``, say) would put every layer
    under that module. The version lives in a leaf, and agrees with pyproject.toml."""
    graph = grimp.build_graph("pytest_roofline")
    importers = graph.find_modules_that_directly_import("pytest_roofline")
    assert not importers, f"modules importing the package root: {sorted(importers)}"
    pyproject = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    declared = re.search(r'^version = "([^"]+)"$', pyproject, re.M)
    assert declared is not None and declared.group(1) == pytest_roofline.__version__


#: Records of many same-typed fields, built by keyword only (two swapped floats would pass
#: the type checker when built by position).
KEYWORD_RECORDS = frozenset({"Result", "KernelResult"})


def _positional_records(source: str) -> tuple[int, list[str]]:
    """How many of ``KEYWORD_RECORDS`` the source constructs, and where one takes a
    positional argument (or is built by ``_make``, which is positional too)."""
    import ast

    built, bad = 0, []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else "")
        owner = func.value if isinstance(func, ast.Attribute) else None
        if name == "_make" and isinstance(owner, (ast.Name, ast.Attribute)) and (
                owner.id if isinstance(owner, ast.Name) else owner.attr) in KEYWORD_RECORDS:
            bad.append(f"line {node.lineno}: {name}")
        elif name in KEYWORD_RECORDS:
            built += 1
            if node.args:
                bad.append(f"line {node.lineno}: {name}")
    return built, bad


def test_results_are_built_by_keyword() -> None:
    """Every ``Result`` and ``KernelResult`` the package builds names each field."""
    built, bad = 0, []
    for path in _sources():
        count, found = _positional_records(path.read_text(encoding="utf-8"))
        built += count
        bad += [f"{path.relative_to(PACKAGE)} {where}" for where in found]
    assert built >= 2, built  # analyze() builds both: the scan sees them
    assert not bad, bad


def test_the_check_finds_a_positional_result() -> None:
    assert _positional_records("r = Result('w', 'h100', 'bf16')")[1]
    assert _positional_records("k = analysis.KernelResult(*row)")[1]
    assert _positional_records("k = KernelResult._make(row)")[1]
    assert not _positional_records("r = Result(workload='w', hw='h100')")[1]
