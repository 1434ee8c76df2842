"""``pezo explore``: the design-space explorer of ``pezo.boards.explore`` (Optuna study on SQLite, trials on the
executor of ``--jobs`` / ``--scheduler``), its Pareto front as md / CSV / JSON and a PNG in ``--out``.

Every input is checked before anything is written or started (one ``pezo: error:`` line naming the option);
then the executor is opened (an unreachable scheduler writes nothing), then ``--out`` is staged, then the
study is opened (the SQLite file is created only now). Ctrl-C: the trials in flight are marked failed, the
finished ones stay in the study, ``--out`` is left as it was; the same command resumes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pezo.cli.args import CLIError, raw
from pezo.cli.cluster import add_executor_args, check_executor_args, executor_from_args
from pezo.cli.output import quoted, staged_output

MAX_TRIALS = 10_000
MAX_STEPS = 1_000_000
DEFAULT_STORAGE = "sqlite:///build/explore.db"
SQLITE = "sqlite:///"


def storage_path(url: str) -> Path:
    """The file of a ``sqlite:///PATH`` URL, checked writable (its first existing directory); CLIError naming
    --storage otherwise. Nothing is created."""
    if not isinstance(url, str) or not url.startswith(SQLITE) or not url[len(SQLITE):].strip():
        raise CLIError(f"--storage must be an SQLite URL sqlite:///PATH (e.g. {DEFAULT_STORAGE}; "
                       f"sqlite:////abs/path.db), got {url!r}")
    path = Path(url[len(SQLITE):])
    shown = quoted(url)
    if path.is_dir():
        raise CLIError(f"--storage {shown}: {quoted(path)} is a directory, not a database file")
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise CLIError(f"--storage {shown}: {quoted(path)} is not writable")
        return path
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise CLIError(f"--storage {shown}: {quoted(parent)} is not a directory")
    import tempfile

    try:  # a real write (os.access says yes to root, even in /proc)
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".pezo-storage-check-"):
            pass
    except OSError as exc:
        raise CLIError(f"--storage {shown}: cannot write in {quoted(parent)} ({exc.strerror})") from None
    return path


def _check(args):
    """Every option, before any work: (setting, space, storage path)."""
    from pezo.boards.explore import DEFAULT_SPACE, SAMPLERS, Setting, SpaceError, check_objectives, load_space
    from pezo.golden.methods.base import MethodConfig
    from pezo.golden.methods.tasks import all_tasks

    if args.task not in all_tasks():
        raise CLIError(f"--task must be one of {', '.join(all_tasks())}, got {args.task!r}")
    for name, hi in (("trials", MAX_TRIALS), ("steps", MAX_STEPS)):
        value = getattr(args, name)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
            raise CLIError(f"--{name} must be an integer in 1..{hi}, got {value!r}")
    try:
        MethodConfig(method="mezo", task=args.task, seed=args.seed, steps=args.steps)
    except ValueError as exc:
        raise CLIError(f"--{exc}") from None
    if args.sampler not in SAMPLERS:
        raise CLIError(f"--sampler must be one of {', '.join(SAMPLERS)}, got {args.sampler!r}")
    try:
        objectives = check_objectives(args.objectives.split(","))
    except ValueError as exc:
        raise CLIError(f"--{exc}") from None
    if args.space is None:
        space = dict(DEFAULT_SPACE)
    else:
        shown = quoted(args.space)
        try:
            space = load_space(args.space)
        except SpaceError as exc:
            raise CLIError(f"--space {shown} {exc}") from None
        except OSError as exc:
            raise CLIError(f"--space {shown}: {exc.strerror}") from None
    if "cycles" not in objectives:  # the array shape matters to the cycles objective only
        if args.space is not None and "rows" in json.loads(Path(args.space).read_text()):
            raise CLIError(f"--space {quoted(args.space)}: key 'rows' (the PE array's rows) applies to the cycles "
                           "objective only; add cycles to --objectives or drop the key")
        space = {k: v for k, v in space.items() if k != "rows"}
    if "cycles" in objectives and "gaussian" in space["strategy"] and len(space["strategy"]) == 1:
        raise CLIError("--objectives cycles needs an engine strategy (otf or pregen) in the space; the engine has "
                       "no gaussian stream")
    path = storage_path(args.storage)
    out = Path(args.out).resolve()
    if path.resolve() == out or out in path.resolve().parents:
        raise CLIError(f"--storage {quoted(args.storage)} is inside --out {quoted(args.out)}, which pezo replaces; "
                       "keep the study elsewhere")
    if args.study is not None and (not args.study.strip() or len(args.study) > 200):
        raise CLIError(f"--study must be a name of 1..200 characters, got {args.study!r}")
    check_executor_args(args)
    setting = Setting(task=args.task, steps=args.steps, seed=args.seed, objectives=objectives)
    return setting, space, path


def cmd_explore(args) -> int:
    """Run (or resume) the study to ``--trials`` finished trials; write and print its Pareto front."""
    from pezo.boards.explore import StudyMismatch, default_study_name, open_study, run_study, write_outputs

    setting, space, path = _check(args)
    name = args.study or default_study_name(setting, space)
    with executor_from_args(args) as executor, \
            staged_output(args.out, args.force, {"command": "pezo explore", "study": name}) as staging:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            study = open_study(args.storage, name, setting, space, args.sampler)
        except StudyMismatch as exc:
            raise CLIError(f"--study: {exc}") from None
        from pezo.boards.explore import finished

        before = finished(study)
        bar = None
        if not args.quiet and args.trials > before:
            from tqdm import tqdm

            bar = tqdm(total=args.trials, initial=min(before, args.trials), desc="explore", unit="trial")
        best = []

        def on_trial(result):
            if result["state"] == "complete" and "accuracy" in result["values"]:
                best.append(result["values"]["accuracy"])
            if bar is not None:
                bar.update(1)
                if best:
                    bar.set_postfix(best_accuracy=f"{max(best):.3f}")

        try:
            ran = run_study(study, setting, space, args.trials, executor, on_trial)
        finally:
            if bar is not None:
                bar.close()
        summary, written = write_outputs(study, setting, staging.path, args.storage)
    summary.update(out=str(args.out), ran_this_run=ran, resumed_from=before)
    if args.json:
        print(json.dumps(summary, indent=1, default=str))
        return 0
    print((Path(args.out) / "front.md").read_text())
    print(f"study {name} in {args.storage}: {ran} trials run now, {before} before "
          f"({summary['counts']['complete']} complete, {summary['counts']['pruned']} pruned)")
    for p in written:
        print(f"wrote {Path(args.out) / p.name}")
    return 0


def add_parsers(sub) -> None:
    from pezo.boards.explore import DEFAULT_OBJECTIVES, OBJECTIVES, SAMPLERS, SPACE_KEYS

    p = sub.add_parser("explore", help="design-space explorer: accuracy x LUT/FF/BRAM x power x cycles of "
                       "perturbation configurations, a Pareto front (Optuna on SQLite, trials on Dask)",
                       description="Search the perturbation configuration (strategy, n_rngs, rng_bits, pool_size, "
                       "pool_bits, lanes, banks, eps_shift) for the Pareto front of a short golden ZO run's accuracy "
                       "against the stream unit's Yosys resources (and the activity proxy, the engine's cycles). "
                       "Resumable: the same command continues its study after Ctrl-C.")
    p.add_argument("--task", default="digits", help="the training task of every trial (digits, digits-rot30, "
                   "digits-rot45, rotten_tomatoes, bbc_news; default digits)")
    p.add_argument("--trials", type=raw, default=24, help=f"finished trials the study should hold, 1..{MAX_TRIALS} "
                   "(a rerun continues up to it; default 24)")
    p.add_argument("--space", type=Path, default=None, help="JSON search space: an object with any of "
                   f"{', '.join(SPACE_KEYS)}; a list = a categorical choice, {{\"low\": L, \"high\": H}} an "
                   "integer range (default: the built-in space, gcd traps included)")
    p.add_argument("--objectives", default=",".join(DEFAULT_OBJECTIVES), help="comma-separated subset of "
                   f"{', '.join(OBJECTIVES)} (default {','.join(DEFAULT_OBJECTIVES)})")
    p.add_argument("--storage", default=DEFAULT_STORAGE, help=f"Optuna storage, sqlite:///PATH (default "
                   f"{DEFAULT_STORAGE})")
    p.add_argument("--study", default=None, help="study name (default: one derived from task, steps, seed, "
                   "objectives and space, so the same command resumes it)")
    p.add_argument("--sampler", default="tpe", help=f"{', '.join(SAMPLERS)}: Optuna's multi-objective TPE or "
                   "NSGA-II (default tpe)")
    p.add_argument("--steps", type=raw, default=3000, help="MeZO steps of every trial's training run (default 3000: "
                   "about 2 s on digits)")
    p.add_argument("--seed", type=raw, default=1, help="seed of the training runs and of the sampler (default 1)")
    add_executor_args(p, "trials")
    p.add_argument("--out", type=Path, default=Path("build/explore"), help="output directory (default "
                   "build/explore): front.md, front.csv, front.json, trials.csv, front.png")
    p.add_argument("--force", action="store_true", help="replace an --out pezo did not write")
    p.add_argument("--json", action="store_true", help="print one JSON object: pareto, trials, study, storage, "
                   "counts, setting")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_explore)
