"""The traces installed with the package (``profile --example NAME``): the test data's own
bytes, found from any folder, and a bad name refused in one line."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pytest_roofline.cli import main
from pytest_roofline.errors import RooflineError
from pytest_roofline.examples import EXAMPLES, example_path

DATA = Path(__file__).parent / "data"
COPIED_FROM = {"v100-hta": DATA / "traces" / "v100_hta_trace_diff_test.json.gz",
               "mi300x-jax-gemm": DATA / "jax_traces" / "mi300x_tracelens_jax08_gemm.xplane.pb"}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_an_example_is_its_test_data_byte_for_byte(name: str) -> None:
    """README.md beside them says "copied unchanged": the same bytes as the test data whose
    sources tests/data's READMEs give."""
    assert digest(example_path(name)) == digest(COPIED_FROM[name])
    assert example_path(name).name in (example_path(name).parent / "README.md").read_text()


def test_every_example_is_named_in_the_profile_help() -> None:
    import argparse

    from pytest_roofline.cli import profile

    sub = argparse.ArgumentParser().add_subparsers()
    profile.add_parser(sub, argparse.ArgumentParser(add_help=False))
    [parser] = sub.choices.values()
    text = " ".join(parser.format_help().split())
    assert all(name in text for name in EXAMPLES)


def test_an_unknown_example_names_the_ones_there_are() -> None:
    with pytest.raises(RooflineError, match="no bundled example trace 'v100'; the examples "
                                            "are v100-hta, mi300x-jax-gemm"):
        example_path("v100")


def test_example_runs_from_any_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["profile", "--example", "mi300x-jax-gemm", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("mi300x_tracelens_jax08_gemm.xplane.pb on mi300x\n"
                          "3.42 ms of kernel time on the device, 100.0% priced")


@pytest.mark.parametrize(("argv", "said"), [
    (["--example", "nope"], "--example 'nope' is not allowed; expected one of v100-hta, "
                            "mi300x-jax-gemm"),
    (["--example", "v100-hta", "t.json"], "give a trace or --example NAME, not both"),
    ([], "profile needs a trace (a file, a jax.profiler folder, or a job's traces), or "
         "--example NAME"),
    (["--example", "x" * 5000], "--example 'xxxx"),
])
def test_a_bad_example_is_a_usage_error(argv: list[str], said: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err) < 200
