"""specs/<kind>/parsed.json: built-in spec files read without PyYAML, never stale."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_roofline import specfiles
from pytest_roofline.specfiles import PARSED_NAME, builtin_dir, load_builtin, load_yaml


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    specfiles._PARSED.clear()


@pytest.mark.parametrize("kind", ["hardware", "models"])
def test_the_committed_files_match_the_yaml(kind: str) -> None:
    """What ``python -m pytest_roofline.specs --check`` checks: every built-in file has an
    entry, equal to what the safe YAML loader reads."""
    folder = builtin_dir(kind)
    entries = json.loads((folder / PARSED_NAME).read_text())
    files = sorted(p.name for p in folder.glob("*.yaml"))
    assert sorted(entries) == files, "run: python -m pytest_roofline.specs"
    for name in files:
        assert entries[name]["data"] == load_yaml(folder / name), \
            f"{kind}/{name} changed: run python -m pytest_roofline.specs"
        assert load_builtin(folder / name) == entries[name]["data"]


def test_check_and_rewrite_command(tmp_path: Path) -> None:
    from pytest_roofline.specs.__main__ import main

    assert main(["--check"]) == 0
    assert main(["--bogus"]) == 2


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "hardware"
    folder.mkdir()
    shutil.copy(builtin_dir("hardware") / "h100-sxm.yaml", folder)
    (folder / PARSED_NAME).write_text(specfiles.parsed_folder(folder))
    return folder


def test_an_edited_file_is_parsed_again_not_read_stale(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    path = folder / "h100-sxm.yaml"
    assert load_builtin(path)["description"] == load_yaml(path)["description"]
    path.write_text(path.read_text().replace("description:", "description: EDITED", 1)
                    .replace("EDITED ", "EDITED"))
    specfiles._PARSED.clear()
    assert load_builtin(path)["description"].startswith("EDITED")


@pytest.mark.parametrize("content", [b"", b"not json", b"[1, 2]", b'{"h100-sxm.yaml": 5}',
                                     b'{"h100-sxm.yaml": {"file": {}, "data": {"name": "x"}}}',
                                     b"[" * 100_000])
def test_a_broken_cache_falls_back_to_the_yaml(tmp_path: Path, content: bytes) -> None:
    folder = _copy(tmp_path)
    (folder / PARSED_NAME).write_bytes(content)
    path = folder / "h100-sxm.yaml"
    assert load_builtin(path) == load_yaml(path)


def test_each_caller_gets_a_mapping_of_its_own(tmp_path: Path) -> None:
    path = _copy(tmp_path) / "h100-sxm.yaml"
    first = load_builtin(path)
    first["name"] = "changed"
    assert load_builtin(path)["name"] == "h100-sxm"


def test_mappings_json_cannot_hold_are_left_to_yaml(tmp_path: Path) -> None:
    (tmp_path / "odd.yaml").write_text("name: odd\nmemory:\n  by_threads: {1: 10 GB/s}\n"
                                       "released: 2024-01-01\n")
    (tmp_path / "plain.yaml").write_text("name: plain\n")
    assert list(json.loads(specfiles.parsed_folder(tmp_path))) == ["plain.yaml"]


def test_a_session_naming_a_builtin_chip_and_model_imports_no_yaml() -> None:
    code = ("import sys; from pytest_roofline import get_hardware, models; "
            "get_hardware('h100'); get_hardware('tpu-v5e'); models.load('llama-3-8b'); "
            "print('yaml' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"
