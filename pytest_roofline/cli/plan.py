"""``plan MODEL --hw CHIP --chips N [--ttft T] [--tpot T]``: serving configurations that fit
and meet the latency targets, ranked by output tokens per second per chip; with ``--train
--batch B --seq S [--step-time T]``, training configurations (dp, tp, pp, ZeRO,
microbatches, recomputation) ranked by training tokens per second per chip
(:mod:`pytest_roofline.planning` states the model of each figure).

An option of the other mode (``--tpot`` with ``--train``, ``--batch`` without it) is refused,
not ignored. The table fits the terminal (each configuration on a line of its own above its
figures when the columns would not); ``--wide`` keeps one row a configuration."""

from __future__ import annotations

import argparse
import dataclasses
import re
from typing import Any

from ..errors import UnitError
from ..units import fraction as read
from .common import EXIT_OK, UsageError, echo, positive, print_json, terminal_width

#: Options of one mode only (dest, flag), with their defaults where the mode has one.
SERVING = {"ttft": ("--ttft", None), "tpot": ("--tpot", None), "isl": ("--isl", 1024),
           "osl": ("--osl", 256), "weight_dtype": ("--weight-dtype", None),
           "kv_dtype": ("--kv-dtype", None), "max_batch": ("--max-batch", 1024)}
TRAINING = {"batch": ("--batch", None), "seq": ("--seq", None),
            "step_time": ("--step-time", None), "max_microbatches": ("--max-microbatches", 64)}


def share(text: str) -> float:
    """``--memory-fraction``: ``0.9`` or ``90%``, in (0, 1]."""
    try:
        number = read(text)
    except UnitError:
        number = -1.0
    if not (0 < number <= 1):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; expected a share of each "
                                         f"chip's memory in (0, 1] such as 0.9 or '90%'")
    return number


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    plan = sub.add_parser("plan", parents=[common],
                          help="serving configurations (tp, pp, ep, batch) that meet latency "
                               "targets, best first")
    plan.add_argument("model", help="a model name (pytest-roofline analyze model --help) or "
                                    "a model file")
    plan.add_argument("--hw", required=True, help="the chip, e.g. h100")
    plan.add_argument("--chips", type=int, required=True, help="chips to spread it over")
    plan.add_argument("--dtype", default="bf16", help="activations and weights (default bf16)")
    plan.add_argument("--link", help="the chip's link the collectives run over (default: its "
                                     "default link)")
    plan.add_argument("--memory-fraction", type=share, default=1.0, metavar="FRACTION",
                      help="share of each chip's memory a configuration may fill, e.g. 0.9 "
                           "or 90%% (default 1)")
    plan.add_argument("--top", type=positive, default=10,
                      help="configurations shown (default 10)")
    serving = plan.add_argument_group("serving (without --train)")
    serving.add_argument("--ttft", help="time-to-first-token target, e.g. 500ms")
    serving.add_argument("--tpot", help="time-per-output-token target, e.g. 50ms")
    serving.add_argument("--isl", type=int, help="input tokens a request (default 1024)")
    serving.add_argument("--osl", type=int, help="output tokens a request (default 256)")
    serving.add_argument("--weight-dtype", help="quantized weights, e.g. fp8")
    serving.add_argument("--kv-dtype", help="KV cache precision, e.g. fp8")
    serving.add_argument("--max-batch", type=int,
                         help="largest batch searched (default 1024)")
    training = plan.add_argument_group("training (--train)")
    training.add_argument("--train", action="store_true",
                          help="search training configurations (needs --batch and --seq)")
    training.add_argument("--batch", type=int, help="the global batch, in sequences")
    training.add_argument("--seq", type=int, help="tokens a sequence")
    training.add_argument("--step-time", help="step-time target, e.g. 2s")
    training.add_argument("--max-microbatches", type=int,
                          help="most microbatches tried (default 64)")
    plan.set_defaults(func=cmd_plan)


def _mode_options(args: argparse.Namespace) -> None:
    """Refuse an option of the other mode, fill the defaults of this one."""
    mine, other = (TRAINING, SERVING) if args.train else (SERVING, TRAINING)
    given = [flag for dest, (flag, _) in other.items() if getattr(args, dest) is not None]
    if given:
        mode = "--train" if args.train else "serving (without --train)"
        raise UsageError(f"plan: {', '.join(given)} {'does' if len(given) == 1 else 'do'} not "
                         f"apply to {mode}; {'drop --train' if args.train else 'add --train'} "
                         f"or drop {'it' if len(given) == 1 else 'them'}")
    for dest, (_, default) in mine.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)


_BARE = re.compile(r"^[+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?$")


def cmd_plan(args: argparse.Namespace) -> int:
    from ..planning import plan, plan_training

    _mode_options(args)
    for option, value in (("--ttft", args.ttft), ("--tpot", args.tpot),
                          ("--step-time", args.step_time)):
        if value is not None and _BARE.match(value.strip()):
            # a bare 500 would be 500 s, when 500 ms was meant: the unit is asked for
            raise UsageError(f"plan {option} {value!r} needs a unit: '{value.strip()}ms' or "
                             f"'{value.strip()}s'")
    width = None if args.wide else terminal_width()
    if args.train:
        if args.batch is None or args.seq is None:
            raise UsageError("plan --train needs --batch (sequences a step) and --seq "
                             "(tokens a sequence)")
        trained = plan_training(args.model, args.hw, chips=args.chips, batch=args.batch,
                                seq=args.seq, step_time=args.step_time, dtype=args.dtype,
                                link=args.link, max_microbatches=args.max_microbatches,
                                memory_fraction=args.memory_fraction)
        if args.json:
            print_json({"model": trained.model, "hw": trained.hw, "chips": trained.chips,
                        "batch": trained.batch, "seq": trained.seq,
                        "step_target_s": trained.step_target, "searched": trained.searched,
                        "configs": [dataclasses.asdict(c) for c in trained.configs[:args.top]]})
        else:
            echo(trained.table(args.top, width=width))
        return EXIT_OK

    result = plan(args.model, args.hw, chips=args.chips, ttft=args.ttft, tpot=args.tpot,
                  isl=args.isl, osl=args.osl, dtype=args.dtype, weight_dtype=args.weight_dtype,
                  kv_dtype=args.kv_dtype, max_batch=args.max_batch, link=args.link,
                  memory_fraction=args.memory_fraction)
    if args.json:
        print_json({"model": result.model, "hw": result.hw, "chips": result.chips,
                    "ttft_target_s": result.ttft_target, "tpot_target_s": result.tpot_target,
                    "isl": result.isl, "osl": result.osl, "searched": result.searched,
                    "configs": [dataclasses.asdict(c) for c in result.configs[:args.top]],
                    "rejected": list(result.rejected)})
        return EXIT_OK
    echo(result.table(args.top, width=width))
    return EXIT_OK
