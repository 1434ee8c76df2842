"""``pezo train --method ...`` and ``pezo sweep --methods ...``: the seed methods of ``golden.methods``.

No parsers of its own: ``training`` adds these options to ``pezo train`` / ``pezo sweep`` and hands over
to ``cmd_train_method`` / ``cmd_sweep_methods`` when they apply.

``pezo train --method mezo`` on a text task is the golden trainer (``golden.zo.trainer``) exactly, its
JSON plus ``"method": "mezo"``; every other method, and any method on a vision task, runs
``golden.methods.registry.train_method`` (the same JSON keys plus ``method``, ``split``, ``memory_bytes``, ...).
"""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path

from pezo.cli.args import CLIError, check_no_repeats, int_list, num, option_error, raw, seed_list
from pezo.cli.cluster import check_executor_args, executor_from_args
from pezo.cli.output import staged_output
from pezo.golden.methods.base import BLOCKS, LOSS_SIGNS, METHODS, PERTURBATIONS, SPLITS, Z_SCALES, MethodConfig
from pezo.golden.methods.registry import train_method
from pezo.golden.methods.tasks import VISION_TASKS, all_tasks

METHOD_FIELDS = (
    "split",
    "bp_lr",
    "g_clip",
    "r_max",
    "p_zero",
    "b_zo",
    "b_bp",
    "loss_sign",
    "mu_weight",
    "mu_node",
    "perturbation",
    "block",
    "weight_bits",
    "act_bits",
    "z_scale",
    "hidden",
    "lr_schedule",
)
"""Options only the seed methods take (``MethodConfig`` fields)."""
METHOD_ONLY = {
    "split": ("elasticzo", "elasticzo-int8"),
    "bp_lr": ("elasticzo",),
    "g_clip": ("elasticzo",),
    **{n: ("elasticzo-int8",) for n in ("r_max", "p_zero", "b_zo", "b_bp", "loss_sign")},
    **{n: ("poormans",) for n in ("mu_weight", "mu_node", "perturbation", "block")},
    **{n: ("sign-m-spsa",) for n in ("weight_bits", "act_bits", "z_scale")},
}
"""Method options that only some methods read (the others would silently ignore them)."""
TRAINER_ONLY = ("trainable", "mode", "head_init", "weight_decay", "max_length", "keep_z")
"""Options only the golden MeZO trainer (text tasks) takes."""


def add_method_args(p: argparse.ArgumentParser) -> None:
    d = MethodConfig()
    g = p.add_argument_group("seed methods (--method other than mezo, or a digits task)")
    g.add_argument("--split", type=raw, help=f"ElasticZO's C: 0..L or {', '.join(SPLITS)} (default {d.split})")
    g.add_argument("--bp-lr", type=num, help="elasticzo: learning rate of the backprop tail (default 0.05)")
    g.add_argument("--g-clip", type=num, help=f"elasticzo: |g| bound (default {d.g_clip:g})")
    g.add_argument("--r-max", type=raw, help=f"elasticzo-int8: perturbation range, 1..63 (default {d.r_max})")
    g.add_argument(
        "--p-zero",
        type=num,
        help="elasticzo-int8: fixed sparsity in [0, 1) (default: the schedule 0.33/0.5/0.9 at 0/20/50 %% of the steps)",
    )
    g.add_argument("--b-zo", type=raw, help=f"elasticzo-int8: ZO update bits b_ZO, 1..7 (default {d.b_zo})")
    g.add_argument("--b-bp", type=raw, help="elasticzo-int8: BP gradient bits, 1..7 (default: the schedule 5/4/3)")
    g.add_argument(
        "--loss-sign",
        type=str,
        help=f"elasticzo-int8: {', '.join(LOSS_SIGNS)} (float CE, or the integer-only Eq. 12) (default {d.loss_sign})",
    )
    g.add_argument(
        "--mu-weight", type=raw, help=f"poormans: weight perturbation in LSB, 1..127 (default {d.mu_weight})"
    )
    g.add_argument("--mu-node", type=raw, help=f"poormans: node perturbation in LSB, 1..127 (default {d.mu_node})")
    g.add_argument("--perturbation", type=str, help=f"poormans: {', '.join(PERTURBATIONS)} (default {d.perturbation})")
    g.add_argument("--block", type=raw, help=f"poormans: a layer index or {', '.join(BLOCKS)} (default {d.block})")
    g.add_argument("--weight-bits", type=raw, help=f"sign-m-spsa: weight bits, 4..16 (default {d.weight_bits})")
    g.add_argument("--act-bits", type=raw, help=f"sign-m-spsa: activation bits, 2..16 (default {d.act_bits})")
    g.add_argument("--z-scale", type=str, help=f"sign-m-spsa: Delta_z, {', '.join(Z_SCALES)} (default {d.z_scale})")
    g.add_argument("--hidden", type=str, help="digits tasks: hidden widths, comma-separated (default 32,32)")
    g.add_argument("--lr-schedule", type=str, help="constant or cosine (default constant)")
    p.add_argument("--method", type=str, default=None, help=f"{', '.join(METHODS)} (default mezo)")


def _hidden(text):
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise CLIError(f"--hidden must be comma-separated integers (e.g. 32,32), got {text!r}") from None


def uses_methods(args) -> bool:
    """True when ``pezo train`` runs ``golden.methods`` rather than the golden MeZO trainer."""
    return (
        (args.method or "mezo") != "mezo"
        or (args.task in VISION_TASKS)
        or any(getattr(args, f, None) is not None for f in METHOD_FIELDS)
    )


def method_config(args, **overrides):
    for name in TRAINER_ONLY:
        if getattr(args, name, None) is not None:
            raise CLIError(
                f"--{name.replace('_', '-')} applies to the golden MeZO trainer (--method mezo on a text task) only"
            )
    fields = {"method": args.method or "mezo"}
    method = overrides.get("method", fields["method"])
    if method in METHODS:
        for name, methods in METHOD_ONLY.items():
            if getattr(args, name, None) is not None and method not in methods:
                raise CLIError(
                    f"--{name.replace('_', '-')} applies to --method {' / '.join(methods)} only, not {method}"
                )
    for name in (
        "task",
        "seed",
        "steps",
        "batch_size",
        "lr",
        "eps",
        "queries",
        "shots",
        "eval_every",
        "family",
        *METHOD_FIELDS,
    ):
        value = getattr(args, name, None)
        if value is not None:
            fields[name] = _hidden(value) if name == "hidden" else value
    if "task" not in fields:
        fields["task"] = "digits"
    options = tuple(
        sorted(
            (n, getattr(args, n))
            for n in ("pool_size", "pool_bits", "n_rngs", "rng_bits", "scaling", "leap", "bit_order")
            if getattr(args, n, None) is not None
        )
    )
    if options:
        fields["family_options"] = options
    fields.update(overrides)
    try:
        config = MethodConfig(**fields)
        if config.method.startswith("elasticzo"):
            layers = len(config.hidden) + 1 if config.task.startswith("digits") else 1
            config.split_point(layers)
    except ValueError as exc:
        raise option_error(
            exc,
            (
                "method",
                "task",
                "seed",
                "steps",
                "batch_size",
                "lr",
                "eps",
                "queries",
                "shots",
                "eval_every",
                "family",
                *METHOD_FIELDS,
                "pool_size",
                "pool_bits",
                "n_rngs",
                "rng_bits",
                "scaling",
                "leap",
                "bit_order",
            ),
            fields,
            MethodConfig(),
        ) from None
    return config


def diverged(exc: Exception, args) -> CLIError:
    """The one line for a run that diverged: the step (when known), what happened (a value no longer finite,
    or a finite loss that blew up: ``golden.losses.LossBlowUp``, whose cause is the update, so --lr) and the
    likely cause (the --lr / --eps the user gave, else named as candidates)."""
    import re

    step = re.search(r"step (\d+)", str(exc))
    where = f"at step {step.group(1)}" if step else "(a value overflowed)"
    blew_up = getattr(exc, "symptom", None)
    shown = lambda value: f"{value:g}" if isinstance(value, float) else value  # noqa: E731
    given = [
        f"--{name} {shown(getattr(args, name))}"
        for name in (("lr",) if blew_up else ("lr", "eps"))
        if getattr(args, name, None) is not None
    ]
    cause = (
        " or ".join(given) + " too large"
        if given
        else (
            "--lr too large for this task (or --eps too small)" if blew_up else "--lr or --eps too large for this task"
        )
    )
    return CLIError(
        f"training diverged {where}: {blew_up or 'the loss or the weights are no longer finite'}; "
        f"likely cause: {cause}; lower it"
    )


@contextlib.contextmanager
def quiet_overflow():
    """NumPy's overflow warnings while training: a diverging run ends in one ``diverged`` line instead."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=RuntimeWarning, message=".*(overflow|invalid value)")
        yield


def cmd_train_method(args) -> int:
    config = method_config(args)
    try:
        with quiet_overflow():
            result = train_method(config, progress=not args.quiet, stop_on_blowup=True)
    except ValueError as exc:  # e.g. eps rounding to 0 LSB at 8-bit weights
        raise CLIError(str(exc)) from None
    except (FloatingPointError, OverflowError) as exc:
        raise diverged(exc, args) from None
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return 0
    split = f", split {config.split}" if config.method.startswith("elasticzo") else ""
    print(
        f"{config.method}{split} on {config.task}, {config.steps} steps, seed {config.seed}, "
        f"{result['trainable_params']} weights, family {result['family']}"
    )
    print(
        f"  test accuracy {result['start_accuracy']:.3f} -> {result['test_accuracy']:.3f} (best validation "
        f"checkpoint, step {result['best_step']}); final weights {result['final_test_accuracy']:.3f}"
    )
    print(
        f"  train loss {result['train_loss_start']:.4f} -> {result['train_loss_end']:.4f}; "
        f"{result['forward_passes']:,} forward passes ({result['forward_equivalents']:,.0f} full-forward "
        f"equivalents); memory {result['memory_bytes']['total'] / 1024:.1f} KiB "
        f"({result['memory_bytes']['formula']}); {1000 * result['seconds_per_step']:.2f} ms per step"
    )
    agree = result["method_details"].get("sign_agreement")
    if agree is not None:
        print(
            f"  integer CE sign agreed with the float sign on {100 * agree:.1f} % of "
            f"{result['method_details']['sign_steps']} ZO steps"
        )
    return 0


def cmd_sweep_methods(args) -> int:
    # the sweep runner pulls statistics / random / decimal: ~10 ms every pezo start-up, so only here
    from pezo.golden.sweep.methods import run_methods, write_outputs

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods:
        raise CLIError(f"--methods must name at least one of {', '.join(METHODS)}, got {args.methods!r}")
    check_no_repeats("--methods", methods)
    for m in methods:
        if m not in METHODS:
            raise CLIError(f"--methods must be a comma-separated subset of {', '.join(METHODS)}, got {m!r}")
    tasks = [t.strip() for t in (args.tasks or "digits,digits-rot45").split(",") if t.strip()]
    check_no_repeats("--tasks", tasks)
    for t in tasks:
        if t not in all_tasks():
            raise CLIError(f"--tasks must be a comma-separated subset of {', '.join(all_tasks())}, got {t!r}")
    seeds = seed_list(args.seeds, lambda seed: MethodConfig(seed=seed))
    if not seeds:
        raise CLIError("--seeds must list at least one integer (e.g. --seeds 1,2,3)")
    check_executor_args(args)
    shots = int_list(args.shots) if args.shots else [16]
    if len(shots) != 1:
        raise CLIError(f"--shots takes one k with --methods (one split per task), got {args.shots!r}")
    shots = shots[0]
    base = method_config(args, method="mezo", task=tasks[0], shots=shots)
    for seed in seeds:
        for task in tasks:  # every run's split, before any run starts (a k too large for a task's classes)
            config = method_config(args, method="mezo", task=task, seed=seed, shots=shots)
            if task not in VISION_TASKS:
                from pezo.golden.lm.data import few_shot_split, load_task

                try:
                    few_shot_split(load_task(task), config.shots, config.seed, test_size=1000)
                except ValueError as exc:
                    raise option_error(exc, ("shots", "seed"), ("shots", "seed")) from None
    out = args.out if args.out != Path("build/sweep") else Path("build/methods")
    with (
        executor_from_args(args) as executor,
        staged_output(
            out, args.force, {"command": "pezo sweep --methods", "methods": methods, "tasks": tasks}
        ) as staging,
    ):
        results = run_methods(base, methods, tasks, seeds, executor=executor, progress=not args.quiet)
        written = write_outputs(results, base, staging.path)
    print((out / "methods.md").read_text())
    for path in written:
        print(f"wrote {out / path.name}")
    return failed_runs(results)


def failed_runs(results: list[dict]) -> int:
    """Exit status of a sweep: 1 (and one line on stderr) when any run failed, else 0."""
    import sys

    errors = [r["error"] for r in results if "error" in r]
    if errors:
        print(f"pezo: error: {len(errors)} of {len(results)} runs failed (first: {errors[0][:200]})", file=sys.stderr)
        return 1
    return 0
