"""The XSpace wing: a ``jax.profiler`` trace (``.xplane.pb``) read and priced.

:mod:`.xplane` reads the protobuf, :mod:`.hlo` the compiled programs it holds,
:mod:`.hlo_pricing` prices an executed fusion with the JAX tracer's table, :mod:`.jax_trace`
joins the executed ops to their instructions, :mod:`.jax_run` profiles a jitted call.

Nothing here imports the torch wing; both build their rows, chips and rules from the core.
"""
