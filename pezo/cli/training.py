"""The golden ZO training commands: ``pezo train`` and ``pezo sweep``.

With ``--method`` (or a digits task, or a seed-method option) ``pezo train`` hands over to
``methods.cmd_train_method``, and ``pezo sweep --methods`` to ``methods.cmd_sweep_methods``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from pezo.cli.args import CLIError, add_family_options, check_no_repeats, int_list, num, option_error, raw, seed_list
from pezo.cli.cluster import add_executor_args, check_executor_args, executor_from_args
from pezo.cli.methods import (
    add_method_args,
    cmd_sweep_methods,
    cmd_train_method,
    diverged,
    failed_runs,
    quiet_overflow,
    uses_methods,
)
from pezo.cli.output import staged_output
from pezo.golden.lm.data import TASKS, few_shot_split, load_task
from pezo.golden.zo.families import FAMILIES, make_sampler
from pezo.golden.zo.mezo import KEEP_Z, KEEP_Z_AUTO_BYTES
from pezo.golden.zo.trainer import HEAD_INITS, TrainConfig, train, trainable_choices

TRAIN_FIELDS = (
    "family",
    "task",
    "shots",
    "steps",
    "seed",
    "trainable",
    "lr",
    "eps",
    "queries",
    "weight_decay",
    "mode",
    "batch_size",
    "head_init",
    "eval_every",
    "max_length",
    "pool_size",
    "pool_bits",
    "n_rngs",
    "rng_bits",
    "scaling",
    "leap",
    "bit_order",
)
"""``pezo train`` / ``pezo sweep`` options of the golden trainer (TrainConfig fields, then family options)."""

SWEEP_SHOTS = "16,256"
"""``pezo sweep``'s k values when ``--shots`` is not given (the experiments sweep)."""


def _train_config(args, **overrides):
    """The TrainConfig of ``pezo train`` / ``pezo sweep`` options (one error line naming the field)."""
    fields = {}
    for name in TRAIN_FIELDS[:15]:
        value = getattr(args, name, None)
        if value is not None:
            fields[name] = value
    options = tuple(
        sorted(
            (name, getattr(args, name))
            for name in ("pool_size", "pool_bits", "n_rngs", "rng_bits", "scaling", "leap", "bit_order")
            if getattr(args, name, None) is not None
        )
    )
    if options:
        fields["family_options"] = options
    given = set(fields)
    fields.update(overrides)
    try:
        return TrainConfig(**fields)
    except ValueError as exc:
        raise option_error(exc, TRAIN_FIELDS, given, TrainConfig()) from None


def _warnings_to_stderr():
    """Library warnings (e.g. a power-of-two pool) as one line each on stderr."""

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"pezo: warning: {message}", file=sys.stderr)

    warnings.showwarning = show
    warnings.simplefilter("default")


def _check_training_inputs(config) -> None:
    """Errors a run would hit late (k too large for the task, family options) surface before any work."""
    try:
        few_shot_split(load_task(config.task), config.shots, config.seed, test_size=config.test_size)
        # a prime dimension: checks the options, not a divisibility the real d may not have
        make_sampler(config.family, 1_000_003, seed=config.seed + 1, **dict(config.family_options))
    except ValueError as exc:
        raise option_error(exc, TRAIN_FIELDS, TRAIN_FIELDS) from None


def cmd_train(args) -> int:
    """One ZO fine-tuning run of the golden trainer; prints a summary or one JSON object."""
    from pezo.golden.methods.tasks import all_tasks

    _warnings_to_stderr()
    if args.task is not None and args.task not in all_tasks():  # every task, not only the golden trainer's text ones
        raise CLIError(f"--task must be one of {', '.join(all_tasks())}, got {args.task!r}")
    if uses_methods(args):
        return cmd_train_method(args)
    config = _train_config(args)
    keep_z = "auto" if args.keep_z is None else args.keep_z
    if keep_z not in KEEP_Z:
        raise CLIError(f"--keep-z must be one of {', '.join(KEEP_Z)}, got {keep_z!r}")
    _check_training_inputs(config)
    try:
        with quiet_overflow():
            run = train(config, progress=not args.quiet, stop_on_blowup=True, keep_z=keep_z)
            result = dict(method="mezo", **run.summary)
    except ValueError as exc:  # e.g. a pool size that divides this run's d
        raise CLIError(str(exc)) from None
    except (FloatingPointError, OverflowError) as exc:
        raise diverged(exc, args) from None
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{config.family} on {config.task}, k={config.shots}, {config.steps} steps, seed {config.seed}, "
        f"trainable {config.trainable} ({result['trainable_params']} weights)"
    )
    print(
        f"  test accuracy {result['start_accuracy']:.3f} -> {result['test_accuracy']:.3f} (best validation "
        f"checkpoint, step {result['best_step']}); final weights {result['final_test_accuracy']:.3f}"
    )
    print(
        f"  train loss {result['train_loss_start']:.4f} -> {result['train_loss_end']:.4f}; "
        f"{1000 * result['seconds_per_step']:.2f} ms per step"
    )
    return 0


def _check_sweep_mode(args) -> None:
    """``pezo sweep`` has two modes: the PeZO experiments (--experiment) and the seed methods (--methods); an
    option of the other mode is an error naming the mode, never ignored."""
    if args.method is not None:
        raise CLIError(
            "--method is an option of pezo train; pezo sweep compares seed methods with --methods "
            f"(e.g. --methods {args.method[:40]})"
        )
    if args.methods is not None:
        if args.experiment:
            raise CLIError(
                "--experiment applies to the PeZO experiments sweep (without --methods) only, not to --methods"
            )
        extra = [name for name in SWEEP_EXPERIMENTS_ONLY if getattr(args, name, None) is not None]
        if extra:
            raise CLIError(
                f"--{extra[0].replace('_', '-')} applies to the PeZO experiments sweep (without --methods) "
                "only, not to --methods"
            )
        return
    if args.tasks is not None:
        raise CLIError("--tasks applies to pezo sweep --methods only; the experiments sweep takes one --task")
    from pezo.cli.methods import METHOD_FIELDS

    extra = [name for name in METHOD_FIELDS if getattr(args, name, None) is not None]
    if extra:
        raise CLIError(
            f"--{extra[0].replace('_', '-')} applies to pezo sweep --methods only (the seed methods), "
            "not to the experiments sweep"
        )


SWEEP_EXPERIMENTS_ONLY = ("trainable", "mode", "head_init", "weight_decay", "max_length")
"""Options of the golden MeZO trainer, which the --methods sweep does not run."""


def cmd_sweep(args) -> int:
    """PeZO's Table 3 / Fig. 3 / Fig. 4 at small scale: runs, JSON, CSV, markdown and PNGs in --out."""
    # the sweep runner pulls statistics / random / decimal: ~10 ms every pezo start-up, so only here
    from pezo.golden.sweep.experiments import EXPERIMENTS, run_sweep, write_outputs

    _warnings_to_stderr()
    _check_sweep_mode(args)
    if args.methods is not None:
        return cmd_sweep_methods(args)
    experiments = args.experiment or list(EXPERIMENTS)
    for name in experiments:
        if name not in EXPERIMENTS:
            raise CLIError(f"--experiment must be one of {', '.join(EXPERIMENTS)}, got {name!r}")
    shots, seeds = int_list(args.shots or SWEEP_SHOTS), seed_list(args.seeds, lambda seed: TrainConfig(seed=seed))
    check_no_repeats("--shots", shots)
    if not shots or not seeds:
        raise CLIError("--shots and --seeds must list at least one integer (e.g. --shots 16,256 --seeds 1,2,3)")
    check_executor_args(args)
    base = _train_config(args, family="gaussian")
    for k in shots:
        for seed in seeds:
            _check_training_inputs(_train_config(args, family="gaussian", shots=k, seed=seed))
    with (
        executor_from_args(args) as executor,
        staged_output(args.out, args.force, {"command": "pezo sweep", "experiments": experiments}) as staging,
    ):
        results = run_sweep(base, experiments, tuple(shots), tuple(seeds), executor=executor, progress=not args.quiet)
        written = write_outputs(results, base, staging.path)
    table = args.out / "table3.md"
    if table.exists():
        print(table.read_text())
    for path in written:
        print(f"wrote {args.out / path.name}")
    return failed_runs(results)


def _add_train_args(p: argparse.ArgumentParser, sweep: bool = False) -> None:
    d = TrainConfig()
    if not sweep:
        p.add_argument("--family", type=str, help=f"perturbation family: {', '.join(FAMILIES)} (default {d.family})")
        p.add_argument("--shots", type=raw, help=f"k training (and validation) examples per class (default {d.shots})")
        p.add_argument("--seed", type=raw, help=f"seed of the split, batches and perturbations (default {d.seed})")
    from pezo.golden.methods.tasks import VISION_TASKS

    p.add_argument(
        "--task",
        type=str,
        help=f"text: {', '.join(TASKS)} (default {d.task}); digits: {', '.join(VISION_TASKS)} (the seed methods' MLP)",
    )
    p.add_argument(
        "--steps",
        type=raw,
        help=f"ZO steps, >= 1 (default {d.steps}"
        + ("; --methods: 1000)" if sweep else "; --method other than mezo, or a digits task: 1000)"),
    )
    p.add_argument(
        "--trainable",
        type=str,
        help=f"{', '.join(trainable_choices())}: head, the last N layers + "
        f"head, biases + LayerNorm + head, or everything (default {d.trainable})",
    )
    p.add_argument("--lr", type=num, help=f"learning rate > 0 (default {d.lr:g}; the seed methods: each method's own)")
    p.add_argument("--eps", type=num, help=f"perturbation scale epsilon > 0 (default {d.eps:g})")
    p.add_argument("--queries", type=raw, help=f"perturbations per step q, >= 1 (default {d.queries})")
    p.add_argument(
        "--weight-decay", type=num, help=f"MeZO weight decay, not on biases/LayerNorm (default {d.weight_decay:g})"
    )
    p.add_argument(
        "--mode",
        type=str,
        help=f"inplace (MeZO: +eps, -2eps, +eps in place) or stream (the FPGA's: "
        f"perturbed weights read, never written) (default {d.mode})",
    )
    p.add_argument("--batch-size", type=raw, help=f"examples per ZO step, >= 1 (default {d.batch_size})")
    p.add_argument("--head-init", type=str, help=f"{', '.join(HEAD_INITS)} (default {d.head_init})")
    p.add_argument("--eval-every", type=raw, help=f"validation every N steps, >= 1 (default {d.eval_every})")
    p.add_argument("--max-length", type=raw, help=f"tokens per text (default {d.max_length})")
    if not sweep:
        p.add_argument(
            "--keep-z",
            type=str,
            help=f"{', '.join(KEEP_Z)}: keep the current perturbation's z between its uses (inplace: one draw per "
            "query instead of three; stream: one for both views and the update; the same results) (auto: up to "
            f"{KEEP_Z_AUTO_BYTES >> 20} MiB of it, tensor by tensor) (default auto)",
        )
        add_family_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_method_args(p)


def add_parsers(sub) -> None:
    """``train`` and ``sweep`` (in this order in ``pezo --help``)."""
    p = sub.add_parser(
        "train",
        help="ZO fine-tuning of all-MiniLM-L6-v2 on real labelled text (golden NumPy "
        "MeZO) with one perturbation family; prints test accuracy before/after",
        description="Few-shot ZO training (MeZO) of a classifier on all-MiniLM-L6-v2 with a "
        "perturbation family: gaussian (MeZO), rademacher, uniform (U(-1,1), no norm matching), "
        "naive-int (raw URNG integers, PeZO Table 3's collapsing row), pezo-pregen, pezo-otf.",
    )
    _add_train_args(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (keys family, task, shots, steps, "
        "seed, test_accuracy, start_accuracy, seconds_per_step, ...)",
    )
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "sweep",
        help="PeZO's Table 3 (families x k x seeds), Fig. 3 (pool size, RNG count) and "
        "Fig. 4 (RNG width) at small scale: JSON, CSV, markdown tables and PNG plots",
        description="Run the accuracy sweeps with one base training configuration and write "
        "sweep.json, sweep.csv, <experiment>.md and <experiment>.png to --out.",
    )
    p.add_argument("--experiment", action="append", help="table3, fig3 or fig4 (repeatable; default all)")
    p.add_argument(
        "--methods",
        type=str,
        help="compare seed methods instead (comma-separated: mezo, elasticzo, "
        "elasticzo-int8, poormans, sign-m-spsa): methods.{md,json,csv,png} in --out (default "
        "build/methods)",
    )
    p.add_argument("--tasks", type=str, help="--methods: comma-separated tasks (default digits,digits-rot45)")
    p.add_argument(
        "--shots", help=f"comma-separated k values (default {SWEEP_SHOTS}; with --methods one k, default 16)"
    )
    p.add_argument("--seeds", default="1,2,3", help="comma-separated seeds (default 1,2,3)")
    add_executor_args(p)
    _add_train_args(p, sweep=True)
    p.add_argument("--out", type=Path, default=Path("build/sweep"), help="output directory (default build/sweep)")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an --out that another pezo command wrote, or "
        "whose pezo files changed (files pezo did not write are never deleted)",
    )
    p.set_defaults(func=cmd_sweep)
