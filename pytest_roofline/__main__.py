"""``python -m pytest_roofline``: the same as the ``pytest-roofline`` command."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
