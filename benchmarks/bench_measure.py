"""Validation of the measured roofline: a numpy GEMM sweep across this machine's ridge.

    python benchmarks/bench_measure.py [--k 4096] [--n 4096] [--mmax 512] [--calibrate]

C[m x n] = A[m x k] @ B[k x n] in fp64 with the weight B fixed (4096 x 4096: 134 MB, well
past the last-level cache of most CPUs) and the batch m doubling from 1: the intensity
2mnk / (8 (mk + kn + mn)) FLOP/B climbs from ~0.25 (a matrix-vector product, memory-bound by
reading B) through the host's ridge to ~100 FLOP/B, as a decode batch does. For each m the
script prints the
roofline bound of ``host`` (min(peak, bandwidth x intensity)), the FLOP/s the best and the
median timed run reached, the efficiency, and the cores the call kept busy
(``Measurement.parallelism``) with the thread count whose memory roof was used (``-``: every
core's). Below the calibrated ridge the achieved rate
should rise with the intensity; above it, flatten near the GEMM peak.

The measured knee is where the two fitted roofs of the data meet: the measured compute roof
(the best rate of any point) over the measured bandwidth (the best rate / intensity of the
points a quarter of the ridge or further below it). It is printed beside the calibrated ridge.
``--calibrate`` measures the host again first (else the cached calibration is used).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import pytest_roofline as rl
from pytest_roofline.measuring import Timer, calibration


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--mmax", type=int, default=512)
    parser.add_argument("--calibrate", action="store_true",
                        help="measure the host again before the sweep")
    args = parser.parse_args()
    if args.calibrate:
        started = time.perf_counter()
        spec, warnings = calibration.calibrate("cpu")
        calibration.save(calibration.cache_path("cpu"), spec)
        print(f"calibrated in {time.perf_counter() - started:.1f} s")
        for line in warnings:
            print(f"warning: {line}")
    host = calibration.load("cpu")
    peak, bandwidth = host.peak("fp64"), host.memory_bandwidth
    ridge = host.ridge("fp64")
    print(f"host: fp64 peak {peak / 1e9:.1f} GFLOP/s, memory {bandwidth / 1e9:.1f} GB/s, "
          f"ridge {ridge:.2f} FLOP/B ({host.description})\n")
    timer = Timer(warmup=1, repeats=5, min_time=0.2)
    rows = []
    print(f"{'m':>6} {'FLOP/B':>8} {'bound GFLOP/s':>14} {'best GFLOP/s':>13} "
          f"{'median GFLOP/s':>15} {'efficiency':>10} {'cores':>6} {'roof':>5}  regime")
    b = np.full((args.k, args.n), 0.25)
    rows_m = 1
    while rows_m <= args.mmax:
        a = np.full((rows_m, args.k), 0.5)
        c = np.empty((rows_m, args.n))
        m = timer(np.matmul, a, b, out=c)
        r = rl.analyze(rl.ops.matmul(rows_m, args.k, args.n, dtype="fp64"), host, measured=m)
        flops = float(r.flops)
        bound = flops / float(r.time)
        rows.append((float(r.intensity), flops / m.best, flops / m.time))
        print(f"{rows_m:>6} {float(r.intensity):>8.2f} {bound / 1e9:>14.1f} "
              f"{flops / m.best / 1e9:>13.1f} {flops / m.time / 1e9:>15.1f} "
              f"{float(r.efficiency):>10.0%} {m.parallelism or 0:>6.2f} "
              f"{r.roof_threads or '-':>5}  {r.regime}")
        rows_m *= 2
    best_rate = max(rate for _, rate, _ in rows)
    low = [rate / i for i, rate, _ in rows if i <= ridge / 4] or [rows[0][1] / rows[0][0]]
    measured_bw = max(low)
    knee = best_rate / measured_bw
    print(f"\nmeasured compute roof {best_rate / 1e9:.1f} GFLOP/s "
          f"({best_rate / peak:.0%} of the calibrated peak); measured bandwidth "
          f"{measured_bw / 1e9:.1f} GB/s ({measured_bw / bandwidth:.0%} of the calibrated "
          f"roof), from {len(low)} point(s) at or below ridge/4")
    print(f"measured knee {knee:.2f} FLOP/B against the calibrated ridge {ridge:.2f} FLOP/B "
          f"(ratio {knee / ridge:.2f})")
    rising = [rate for i, rate, _ in rows if i < ridge]
    flat = [rate for i, rate, _ in rows if i >= 2 * ridge]
    if len(rising) > 1:
        print(f"below the ridge the best rate goes {rising[0] / 1e9:.1f} -> "
              f"{rising[-1] / 1e9:.1f} GFLOP/s; above 2x the ridge it stays within "
              f"{(max(flat) - min(flat)) / max(flat):.0%} of its best" if flat else "")
    if flat:
        print(f"median above 2x ridge: {statistics.median(flat) / 1e9:.1f} GFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
