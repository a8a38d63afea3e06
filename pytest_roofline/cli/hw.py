"""``hw list`` and ``hw show``: the chips, their peaks, bandwidths, ridges and sources."""

from __future__ import annotations

import argparse
from typing import Any

from ..units import si
from .common import EXIT_OK, PROG, echo, print_json, render_table, width_of, wrap

# -- hw --------------------------------------------------------------------------------------


def cmd_hw_list(args: argparse.Namespace) -> int:
    from ..hardware import get_hardware, list_hardware
    chips = [get_hardware(n) for n in list_hardware()]
    if args.json:
        print_json([c.summary() for c in chips])
        return EXIT_OK
    rows = [[c.name, ", ".join(c.aliases) or "-", c.vendor or "-",
             si(c.memory_capacity, "B"), si(c.memory_bandwidth, "B/s"), c.default_dtype,
             si(c.peak(), "FLOP/s"), f"{c.ridge():.1f}"] for c in chips]
    width = width_of(args)
    table = render_table(["chip", "aliases", "vendor", "memory", "bandwidth", "dtype", "peak",
                          "ridge FLOP/B"], rows, align="llllrlrr", width=width, optional=[1])
    echo(table)
    aliases = "" if table.splitlines()[0].split()[1] == "aliases" else (
        " Aliases: `hw show NAME`, or --wide.")
    echo("\n" + wrap(f"{len(chips)} chips; peaks are dense matrix peaks in the chip's default "
                     f"precision. `{PROG} hw show NAME` lists every precision.{aliases}",
                     width))
    return EXIT_OK


def cmd_hw_show(args: argparse.Namespace) -> int:
    from ..hardware import get_hardware
    from ..hardware.chip import IN_NETWORK_ALGORITHMS

    chip = get_hardware(args.name)
    if args.json:
        print_json(chip.summary())
        return EXIT_OK
    width = width_of(args)
    aliases = f" (aliases: {', '.join(chip.aliases)})" if chip.aliases else ""
    echo(wrap(f"{chip.name}{aliases}: {chip.description or chip.vendor}", width))
    echo(wrap(f"memory: {si(chip.memory_capacity, 'B')} at {si(chip.memory_bandwidth, 'B/s')}; "
              f"default precision {chip.default_dtype}", width) + "\n")
    names = list(dict.fromkeys([*chip.matrix, *chip.matrix_sparse, *chip.vector]))

    def peak(table: Any, name: str) -> str:
        return si(table[name], "FLOP/s") if name in table else "-"

    def dense(name: str) -> str:
        if name in chip.vector_matmul:
            return "on vector units"
        return peak(chip.matrix, name)

    rows = [[n, dense(n), peak(chip.matrix_sparse, n), peak(chip.vector, n),
             f"{chip.ridge(n):.1f}" if n in chip.matrix or n in chip.vector_matmul else "-"]
            for n in names]
    echo(render_table(["precision", "matrix (dense)", "matrix (sparse)", "vector",
                       "ridge FLOP/B"], rows, align="lrrrr", width=width))
    if chip.vector_matmul:
        echo(wrap(f"matmuls in {', '.join(chip.vector_matmul)} run on the vector units (no "
                  f"matrix path); TF32 only when asked for", width))
    if chip.links:
        echo("\nlinks (one direction):")
        for link in chip.links.values():
            latency = "" if link.latency_kind == "unpublished" else (
                f", {si(link.latency, 's')} a step ({link.latency_kind}"
                + ("; not a physical minimum: bounds priced with it are not either)"
                   if link.latency_kind == "measured" else ")"))
            switch = [a for a in link.algorithms if a in IN_NETWORK_ALGORITHMS]
            reduces = f", reduces in the switch ({', '.join(switch)})" if switch else ""
            echo(wrap(f"{link.name}: {link.count} x {si(link.bandwidth, 'B/s')} = "
                      f"{si(link.total, 'B/s')}{latency}{reduces}"
                      + (f"  ({link.note})" if link.note else ""), width, indent="  "))
    if chip.onchip:
        echo("\n" + wrap("on-chip memory: " + ", ".join(
            f"{lv.name} {si(lv.capacity, 'B')}" for lv in chip.onchip), width))
    echo("\nsources:")
    for key, text in chip.sources.items():
        echo(wrap(f"{key}: {text}", width, indent="  "))
    echo("\n" + wrap(f"spec: {chip.origin}", width))
    return EXIT_OK


