"""Atomic file writes for the reports: the one implementation is
:mod:`pytest_roofline.atomic` (the engine's calibration files use it too)."""

from __future__ import annotations

from ..atomic import why_not_written, write_text, write_with

__all__ = ["why_not_written", "write_text", "write_with"]
