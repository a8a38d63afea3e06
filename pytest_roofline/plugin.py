"""pytest hooks for pytest-roofline (filled in by the plugin work)."""

from __future__ import annotations
