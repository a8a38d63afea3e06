"""The Kineto wing: a torch profiler trace (``export_chrome_trace``) read and priced.

:mod:`.trace_json` reads the file's JSON (size cap, gzip), :mod:`.trace_file`
turns it into CPU ops, device kernels and their links, :mod:`.pricing`
is the one adapter to the torch tracer's op table, :mod:`.copies` prices memory copies,
:mod:`.capture` matches CUDA graph replays to their captures, :mod:`.join` joins kernels to
ops and builds the profile through the core's row factory (``..rows``).

Nothing here imports the JAX wing; both build their rows, chips and rules from the core.
"""
