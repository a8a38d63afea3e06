"""The engine: a workload's kernels (:mod:`.workload`), how they fuse and overlap
(:mod:`.fusion`, :mod:`.overlap`), their bounds and regime on a chip (:mod:`.analysis`), over
arrays of shapes (:mod:`.sweeps`) and per kernel (:mod:`.breakdown`). It knows chips through
:mod:`pytest_roofline.hardware` and nothing above it: the kernel formulas, models, tracers and
the plugin all build on it. The public names are re-exported by the package root."""
