"""``plan MODEL --hw CHIP --chips N [--ttft T] [--tpot T]``: serving configurations that fit
and meet the latency targets, ranked by output tokens per second per chip; with ``--train
--batch B --seq S [--step-time T]``, training configurations (dp, tp, pp, ZeRO,
microbatches, recomputation) ranked by training tokens per second per chip
(:mod:`pytest_roofline.planning` states the model of each figure)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from .common import EXIT_OK, echo, print_json


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    plan = sub.add_parser("plan", parents=[common],
                          help="serving configurations (tp, pp, ep, batch) that meet latency "
                               "targets, best first")
    plan.add_argument("model", help="a model name (pytest-roofline analyze model --help) or "
                                    "a model file")
    plan.add_argument("--hw", required=True, help="the chip, e.g. h100")
    plan.add_argument("--chips", type=int, required=True, help="chips to spread it over")
    plan.add_argument("--ttft", help="time-to-first-token target, e.g. 500ms")
    plan.add_argument("--tpot", help="time-per-output-token target, e.g. 50ms")
    plan.add_argument("--isl", type=int, default=1024, help="input tokens a request "
                                                            "(default 1024)")
    plan.add_argument("--osl", type=int, default=256, help="output tokens a request "
                                                           "(default 256)")
    plan.add_argument("--dtype", default="bf16", help="activations and weights (default bf16)")
    plan.add_argument("--weight-dtype", help="quantized weights, e.g. fp8")
    plan.add_argument("--kv-dtype", help="KV cache precision, e.g. fp8")
    plan.add_argument("--max-batch", type=int, default=1024,
                      help="largest batch searched (default 1024)")
    plan.add_argument("--top", type=int, default=10, help="configurations shown (default 10)")
    plan.add_argument("--train", action="store_true",
                      help="search training configurations (needs --batch and --seq)")
    plan.add_argument("--batch", type=int, help="training: the global batch, in sequences")
    plan.add_argument("--seq", type=int, help="training: tokens a sequence")
    plan.add_argument("--step-time", help="training: step-time target, e.g. 2s")
    plan.set_defaults(func=cmd_plan)


def cmd_plan(args: argparse.Namespace) -> int:
    from ..errors import RooflineError
    from ..planning import plan, plan_training

    if args.train:
        if args.batch is None or args.seq is None:
            raise RooflineError("plan --train needs --batch (sequences a step) and --seq "
                                "(tokens a sequence)")
        trained = plan_training(args.model, args.hw, chips=args.chips, batch=args.batch,
                                seq=args.seq, step_time=args.step_time, dtype=args.dtype)
        if args.json:
            print_json({"model": trained.model, "hw": trained.hw, "chips": trained.chips,
                        "batch": trained.batch, "seq": trained.seq,
                        "step_target_s": trained.step_target, "searched": trained.searched,
                        "configs": [dataclasses.asdict(c) for c in trained.configs[:args.top]]})
        else:
            echo(trained.table(args.top))
        return EXIT_OK

    result = plan(args.model, args.hw, chips=args.chips, ttft=args.ttft, tpot=args.tpot,
                  isl=args.isl, osl=args.osl, dtype=args.dtype, weight_dtype=args.weight_dtype,
                  kv_dtype=args.kv_dtype, max_batch=args.max_batch)
    if args.json:
        print_json({"model": result.model, "hw": result.hw, "chips": result.chips,
                    "ttft_target_s": result.ttft_target, "tpot_target_s": result.tpot_target,
                    "isl": result.isl, "osl": result.osl, "searched": result.searched,
                    "configs": [dataclasses.asdict(c) for c in result.configs[:args.top]],
                    "rejected": list(result.rejected)})
        return EXIT_OK
    echo(result.table(args.top))
    return EXIT_OK
