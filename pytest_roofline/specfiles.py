"""Reading the YAML spec files (hardware and models): safe loading, and where they ship."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import SpecError


def builtin_dir(kind: str) -> Path:
    """The folder of built-in ``kind`` files ("hardware" or "models") in the installed package."""
    from importlib import resources

    try:
        return Path(str(resources.files("pytest_roofline.specs"))) / kind
    except ModuleNotFoundError:  # pragma: no cover - a source checkout without install
        return Path(__file__).resolve().parent.parent / "specs" / kind


def load_yaml(path: Path, what: str = "spec file") -> dict[str, Any]:
    """A YAML mapping read with a safe loader; errors name the file and what is wrong."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    try:
        data = yaml.load(text, Loader=loader)  # a safe loader: no Python objects
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: a {what} must be a mapping of fields, got "
                        f"{type(data).__name__}")
    return data
