"""Runs in its own process (``tests/test_trace_mesh.py`` starts it): JAX reads the number of
CPU devices once, when it initialises, so the flag is set before anything imports jax and
never reaches the other jax tests."""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8").strip()
