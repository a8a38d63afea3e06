"""A psum profiled (a ``jax.profiler`` trace of XLA:CPU on 2 of 8 CPU devices, read by the
XSpace reader) and traced (``trace()`` of the same ``shard_map``): one price.

Expected figure: the collectives table's ring all-reduce, 2·D·(N-1)/N link bytes a chip,
D = 256 x 256 fp32 = 262,144 B, N = 2: 262,144 B. The profile's row holds one call per
device (2) and its bound is the traced psum's, twice (float equality up to 1e-12).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

import pytest_roofline as rl


def test_a_profiled_psum_is_priced_as_trace_prices_it(tmp_path: Path) -> None:
    mesh = Mesh(np.array(jax.devices()[:2]), ("x",))

    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=P("x"), out_specs=P())
    def total(a):
        return jax.lax.psum(a, "x")

    x = jnp.ones((512, 256), jnp.float32)
    traced = rl.trace(total, jax.ShapeDtypeStruct(x.shape, x.dtype))
    (link,) = [k for k in traced.kernels if k.link_bytes]
    assert float(link.link_bytes) == 2 * (256 * 256 * 4) * (2 - 1) / 2 == 262_144
    total(x).block_until_ready()
    options = jax.profiler.ProfileOptions()
    options.host_tracer_level = 3
    with jax.profiler.trace(str(tmp_path), profiler_options=options):
        total(x).block_until_ready()
    chip = rl.get_hardware("h100-sxm")
    profile = rl.read_trace(tmp_path, hw=chip)
    (row,) = [r for r in profile.rows if r.regime == "network"]
    assert row.count == 2 and row.category == "communication"
    assert row.bound == pytest.approx(2 * float(rl.analyze(traced, chip).time), rel=1e-12)
    closed = rl.analyze(rl.ops.all_reduce(256 * 256, 2, dtype="fp32"), chip)
    assert row.bound == pytest.approx(2 * float(closed.time), rel=1e-12)
