"""``pezo sim engine`` (RTL co-simulation of ZO training on the engine) and ``pezo train-int8`` (golden
INT8 ZO training of the engine's head, beside the float linear probe)."""

from __future__ import annotations

import argparse
import json

from pezo.cli.args import CLIError, num, option_error, raw
from pezo.cli.net import (
    STREAM_ONLY,
    add_net_args,
    add_split_seed_arg,
    check_mode,
    check_saturation,
    check_seed_option,
    check_stream_options,
    cmd_train_int8_net,
    head_and_net_default,
)
from pezo.golden.engine.nets import NET_NAMES
from pezo.golden.engine.zo_engine import EngineConfig
from pezo.golden.zo.int8_head import STEPS_RANGE, Int8Task, Int8TrainConfig, train_int8

MAX_SIM_STEPS = 10_000


def add_engine_args(p: argparse.ArgumentParser) -> None:
    """The options of both engines; each default is the head engine's and, where it differs, the --net runs'."""
    from pezo.golden.zo.net_data import NET_TASKS

    d, t = EngineConfig().to_dict(), _train_defaults()
    rt_nets = ", ".join(name for name, task in NET_TASKS.items() if task == t.task)
    p.add_argument("--strategy", default=d["strategy"], help="perturbation stream: otf or pregen (default otf)")
    p.add_argument(
        "--rows",
        type=raw,
        help=f"R: examples in parallel, 1..64, dividing --batch {head_and_net_default(d['rows'], 'rows')}",
    )
    p.add_argument(
        "--cols",
        type=raw,
        help="C: weights (stream lanes) per cycle, 1..64, dividing 384 (with --net: "
        f"every layer's inputs) {head_and_net_default(d['cols'], 'cols')}",
    )
    p.add_argument("--batch", type=raw, help=f"B: examples per ZO step {head_and_net_default(d['batch'], 'batch')}")
    p.add_argument(
        "--eps-shift",
        type=raw,
        help=f"epsilon = 2^(12-S) weight LSBs, 0..24 {head_and_net_default(d['eps_shift'], 'eps_shift')}",
    )
    p.add_argument(
        "--stream-seed",
        type=raw,
        help="master seed of the LFSRs / pool (with --net, 0 = the "
        f"--split-seed) {head_and_net_default(d['seed'], 'stream_seed')}",
    )
    p.add_argument(
        "--rng-bits", type=raw, help=f"otf: LFSR width, 3..16 {head_and_net_default(d['rng_bits'], 'rng_bits')}"
    )
    p.add_argument(
        "--lfsr-leap",
        type=raw,
        help="otf: LFSR steps per clock (leap-forward), 1..B, coprime to "
        f"2^B-1 {head_and_net_default(d['lfsr_leap'], 'lfsr_leap')}",
    )
    p.add_argument(
        "--lfsr-bit-order",
        help="otf: lane bit order, spread or natural (PeZO's) "
        f"{head_and_net_default(d['lfsr_bit_order'], 'lfsr_bit_order')}",
    )
    p.add_argument(
        "--pool-size", type=raw, help=f"pregen: pool values N {head_and_net_default(d['pool_size'], 'pool_size')}"
    )
    p.add_argument(
        "--shots",
        type=raw,
        help=f"k training shots per class of Rotten Tomatoes (the head engine; "
        f"--net {rt_nets}) {head_and_net_default(t.shots, 'shots')}",
    )
    add_split_seed_arg(
        p,
        "seed of the data split and the batch order (with --net: and the initial weights) "
        f"{head_and_net_default(t.seed, 'seed')}",
    )
    p.add_argument(
        "--lr",
        type=num,
        help="MeZO learning rate on the real weights (the head engine; --net --loss "
        f"host) {head_and_net_default(t.lr, 'lr')}",
    )
    p.add_argument(
        "--weight-exponent", type=raw, help=f"the head engine: weight LSB = 2^E (default {t.weight_exponent})"
    )


def _train_defaults():
    return Int8TrainConfig()


ENGINE_OPTIONS = {
    "rows": "--rows",
    "cols": "--cols",
    "batch": "--batch",
    "eps_shift": "--eps-shift",
    "seed": "--stream-seed",
    "rng_bits": "--rng-bits",
    "pool_size": "--pool-size",
    "lfsr_leap": "--lfsr-leap",
    "lfsr_bit_order": "--lfsr-bit-order",
}
"""EngineConfig field -> the option that sets it (its ``seed`` is the stream's: ``--stream-seed``)."""
TRAIN_OPTIONS = {
    "shots": "--shots",
    "seed": "--split-seed",
    "lr": "--lr",
    "weight_exponent": "--weight-exponent",
    "eval_every": "--eval-every",
    "steps": "--steps",
}
"""Int8TrainConfig field -> the option that sets it (its ``seed`` is the data's: ``--split-seed``)."""


def int8_config(args, steps: int | None = None):
    """The ``Int8TrainConfig`` (with its ``EngineConfig``) of the options; one error line per bad field, in the
    options' names."""
    check_seed_option(args)
    engine_fields = {"strategy": args.strategy}
    for field, option in ENGINE_OPTIONS.items():
        value = getattr(args, option[2:].replace("-", "_"), None)
        if value is not None:
            engine_fields[field] = value
    check_stream_options(args.strategy, {name: getattr(args, name, None) for name in STREAM_ONLY})
    try:
        engine = EngineConfig.from_dict(engine_fields)
    except ValueError as exc:
        options = {**ENGINE_OPTIONS, "strategy": "--strategy"}
        raise option_error(exc, options, engine_fields, EngineConfig().to_dict()) from None
    fields = {}
    for field, option in TRAIN_OPTIONS.items():
        value = getattr(args, option[2:].replace("-", "_"), None) if field != "steps" else steps
        if value is not None:
            fields[field] = value
    try:
        return Int8TrainConfig(engine=engine, **fields)
    except ValueError as exc:
        raise option_error(exc, TRAIN_OPTIONS, fields, Int8TrainConfig()) from None


def _check_steps(steps, hi: int) -> int:
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= hi:
        raise CLIError(f"--steps must be an integer in 1..{hi}, got {steps!r}")
    return steps


def _load_task(train, splits):
    try:  # a bad split (k too large for the task) or engine shape raises before any embedding work
        return Int8Task.load(train, splits=splits, progress=True)
    except ValueError as exc:  # "shots must be in 1..N for task ..." in the option's name
        raise option_error(exc, {"shots": "--shots"}, ("shots",)) from None


def cmd_train_int8(args) -> int:
    check_mode(args)
    if args.net:
        return cmd_train_int8_net(args, _check_steps(args.steps, STEPS_RANGE[1]) if args.steps is not None else None)
    train = int8_config(args, steps=_check_steps(args.steps, STEPS_RANGE[1]) if args.steps is not None else None)
    task = _load_task(train, ("train", "val", "test"))
    result = train_int8(train, progress=not args.quiet, task=task)
    check_saturation(
        result,
        f"--lr {train.lr:g} is too large for 2^{train.weight_exponent} weight LSBs"
        + ("" if args.lr is not None else " (the default)"),
    )
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"INT8 ZO ({train.engine.stream.strategy}, engine {train.engine.array.rows}x{train.engine.array.cols}) "
        f"on {train.task}, "
        f"k={train.shots}, {train.steps} step{'' if train.steps == 1 else 's'}, split seed {train.seed}"
    )
    print(
        f"  test accuracy {result['start_accuracy']:.3f} -> {result['test_accuracy']:.3f} (best validation, step "
        f"{result['best_step']}); float linear probe {result['float_probe_test_accuracy']:.3f} "
        f"(INT8 ZO {-result['gap_points']:+.1f} points against it)"
    )
    print(
        f"  train loss {result['train_loss_start']:.4f} -> {result['train_loss_end']:.4f}; weights "
        f"{result['weight_range'][0]}..{result['weight_range'][1]}; g saturated in {result['g_saturated_steps']} steps"
    )
    return 0


def add_parsers(sub) -> None:
    """``train-int8`` (after ``sim``, ``pezo.cli.sim``, in ``pezo --help``)."""
    t = sub.add_parser(
        "train-int8",
        help="golden INT8 ZO training on the engine (bit-exact with the RTL): its "
        f"384 -> 2 head beside the float linear probe, or with --net a whole network "
        f"({', '.join(NET_NAMES)})",
        description="Trains the int8 384 -> 2 head on frozen MiniLM embeddings of Rotten Tomatoes "
        "with the engine's integer ZO step (golden.engine) and reports test accuracy next to the "
        "float linear probe on the same shots; with --net, a whole INT8 network on the network "
        f"engine ({', '.join(NET_NAMES)}) with the on-chip loss or the host's g.",
    )
    lo, hi = STEPS_RANGE
    t.add_argument(
        "--steps", type=raw, help=f"ZO steps, {lo}..{hi} {head_and_net_default(_train_defaults().steps, 'steps')}"
    )
    t.add_argument(
        "--eval-every",
        type=raw,
        help=f"validation every N steps, {lo}..{hi} {head_and_net_default(_train_defaults().eval_every, 'eval_every')}",
    )
    add_engine_args(t)
    add_net_args(t, sim=False)
    t.add_argument("--json", action="store_true", help="print one JSON object")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train_int8)
