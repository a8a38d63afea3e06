"""The package's version, in a leaf module: the reports write it into every record without
importing the package root, which imports every layer (``pyproject.toml`` carries the same
string; ``tests/test_package_shape.py`` checks they agree)."""

from __future__ import annotations

__version__ = "0.1.0"
