"""``pezo explore``: the design-space explorer of ``pezo.boards.flow.explore`` (Optuna study on SQLite, trials on the
executor of ``--jobs`` / ``--scheduler``), its Pareto front as md / CSV / JSON and a PNG in ``--out``.

Every input is checked before anything is written or started (one ``pezo: error:`` line naming the option;
an existing study file is only read); then the executor is opened (an unreachable scheduler writes nothing),
then ``--out`` is staged, then the study is opened (the SQLite file is created only now). Ctrl-C: the trials in
flight are marked failed, the finished ones stay in the study, ``--out`` is left as it was; the same command
resumes.

**Where the study lives.** ``--storage`` given: that file (its directory must exist; never inside ``--out``,
which pezo replaces). Else, with ``--out`` given: ``explore.db`` inside ``--out``, written as part of the output:
the run copies the previous ``--out/explore.db`` into the staging directory, runs the study there and the commit
puts it in ``--out`` with the reports (in the manifest, so the next run may replace ``--out`` and resumes). After
Ctrl-C or a failure, if trials finished, ``--out`` is replaced by itself as it was (reports, byte for byte) with
the new ``explore.db``, so the same command still resumes; a ``--out`` pezo explore did not write is left alone
(those trials are lost). Two runs fill one study together only with ``--storage``. Neither given:
``sqlite:///build/explore.db`` (beside the default ``--out build/explore``), as before.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from pezo.cli.args import CLIError, raw
from pezo.cli.cluster import add_executor_args, check_executor_args, executor_from_args
from pezo.cli.output import MARKER, commit_output, quoted, staged_output

MAX_TRIALS = 10_000
MAX_STEPS = 1_000_000
DEFAULT_STORAGE = "sqlite:///build/explore.db"
"""The study file when neither --storage nor --out is given (beside the default --out)."""
DEFAULT_OUT = Path("build/explore")
STUDY_FILE = "explore.db"
"""The study file inside --out when --out is given and --storage is not."""
SQLITE = "sqlite:///"


def check_study_file(path: Path, what: str, advice: str = "name a new file or a study database of pezo explore"):
    """An existing study file, only read (never changed): empty, or an intact SQLite database that is empty or
    holds Optuna's tables; CLIError starting with ``what`` (the option as typed), ending with ``advice``, otherwise."""
    import sqlite3

    if path.stat().st_size == 0:  # SQLite's empty database
        return
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            tables = sorted(row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
            problems = [row[0] for row in con.execute("PRAGMA quick_check(1)")]
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        if "locked" in str(exc):  # another run writes the study now: Optuna waits for it
            return
        kind = "a corrupt SQLite database" if "malformed" in str(exc) else "not an SQLite database"
        raise CLIError(f"{what}: {kind} ({exc}); {advice}") from None
    if problems != ["ok"]:
        found = " ".join(" ".join(problems).split()[:12])
        raise CLIError(f"{what}: a corrupt SQLite database (quick_check: {found}); {advice}")
    if tables and "studies" not in tables:
        raise CLIError(
            f"{what}: an SQLite database but not an Optuna study storage (tables "
            f"{', '.join(tables[:5])}{', ...' if len(tables) > 5 else ''}); {advice}"
        )


def storage_path(url: str, new_dirs: bool = False, out: Path | None = None) -> Path:
    """The file of a ``sqlite:///PATH`` URL, checked before anything is written: not inside ``out`` (which pezo
    replaces); an existing file readable, writable and a study database (``check_study_file``); a new one in a
    writable directory that exists (with ``new_dirs``, the default storage's, in one that pezo may create).
    CLIError naming --storage otherwise. Nothing is created or changed."""
    if not isinstance(url, str) or not url.startswith(SQLITE) or not url[len(SQLITE) :].strip():
        raise CLIError(
            f"--storage must be an SQLite URL sqlite:///PATH (e.g. {DEFAULT_STORAGE}; "
            f"sqlite:////abs/path.db), got {url!r}"
        )
    path = Path(url[len(SQLITE) :])
    shown = quoted(url)
    if out is not None and (path.resolve() == out.resolve() or out.resolve() in path.resolve().parents):
        raise CLIError(
            f"--storage {shown} is inside --out {quoted(out)}, which pezo replaces; keep the study "
            f"elsewhere, or omit --storage to keep it in --out as {STUDY_FILE}"
        )
    if path.is_dir():
        raise CLIError(f"--storage {shown}: {quoted(path)} is a directory, not a database file")
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise CLIError(f"--storage {shown}: {quoted(path)} is not writable")
        check_study_file(path, f"--storage {shown}")
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
    if parent != path.parent and not new_dirs:  # as --csv / --plot: pezo creates no directory for a file
        raise CLIError(f"--storage {shown}: the directory {quoted(path.parent)} does not exist")
    return path


@dataclass(frozen=True)
class Storage:
    """Where the study lives (module docstring): ``url`` as reported, its file ``path``, and whether it is
    the ``explore.db`` inside ``--out`` (``in_out``), written with the outputs."""

    url: str
    path: Path
    in_out: bool = False


def _storage(args, out: Path) -> Storage:
    """--storage, else explore.db in a given --out, else the default; each checked (nothing is written)."""
    if args.storage is not None:
        return Storage(args.storage, storage_path(args.storage, out=out))
    if args.out is None:
        return Storage(DEFAULT_STORAGE, storage_path(DEFAULT_STORAGE, new_dirs=True))
    path = out / STUDY_FILE
    if path.is_dir() or (path.exists() and not os.access(path, os.R_OK)):
        raise CLIError(
            f"--out {quoted(out)}: {quoted(path)} (the study, kept in --out without --storage) is not a readable file"
        )
    if path.exists():
        check_study_file(
            path,
            f"--out {quoted(out)}: {quoted(path)} (the study, kept in --out without --storage)",
            "move it away, or give --storage",
        )
    return Storage(SQLITE + str(path), path, in_out=True)


def _check(args):
    """Every option, before any work: (setting, space, Storage, out)."""
    from pezo.boards.flow.explore import DEFAULT_SPACE, SAMPLERS, Setting, SpaceError, check_objectives, load_space
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
            raise CLIError(
                f"--space {quoted(args.space)}: key 'rows' (the PE array's rows) applies to the cycles "
                "objective only; add cycles to --objectives or drop the key"
            )
        space = {k: v for k, v in space.items() if k != "rows"}
    if "cycles" in objectives and "gaussian" in space["strategy"] and len(space["strategy"]) == 1:
        raise CLIError(
            "--objectives cycles needs an engine strategy (otf or pregen) in the space; the engine has "
            "no gaussian stream"
        )
    out = DEFAULT_OUT if args.out is None else Path(args.out)
    storage = _storage(args, out)
    if args.study is not None and (not args.study.strip() or len(args.study) > 200):
        raise CLIError(f"--study must be a name of 1..200 characters, got {args.study!r}")
    check_executor_args(args)
    setting = Setting(task=args.task, steps=args.steps, seed=args.seed, objectives=objectives)
    return setting, space, storage, out


def _written_by_explore(out: Path) -> bool:
    """``out`` is absent, empty or holds pezo explore's output (its marker names the command)."""
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return True
    try:
        return json.loads((out / MARKER).read_text()).get("command") == "pezo explore"
    except (OSError, ValueError, AttributeError):
        return False


def _keep_finished_trials(study_file: Path, out: Path, what: dict) -> None:
    """After an interrupt or a failure: ``out`` replaced by itself as it was (its files copied, times kept)
    plus ``study_file`` as its explore.db, so the trials that finished stay in the study (module docstring)."""
    keep = out.parent / f".{out.name}.keep-{os.getpid()}"
    shutil.rmtree(keep, ignore_errors=True)
    try:
        if out.is_dir():
            shutil.copytree(out, keep, ignore=shutil.ignore_patterns(MARKER, STUDY_FILE))
        else:
            keep.mkdir()
        os.replace(study_file, keep / STUDY_FILE)
        commit_output(keep, out, what)
    except BaseException:
        shutil.rmtree(keep, ignore_errors=True)
        raise


def cmd_explore(args) -> int:
    """Run (or resume) the study to ``--trials`` finished trials; write and print its Pareto front."""
    from pezo.boards.flow.explore import StudyMismatch, default_study_name, open_study, run_study, write_outputs

    setting, space, storage, out = _check(args)
    name = args.study or default_study_name(setting, space)
    what = {"command": "pezo explore", "study": name}
    with executor_from_args(args) as executor, staged_output(out, args.force, what) as staging:
        url = storage.url
        if storage.in_out:  # the study is part of the output: run it in the staging directory
            work = staging.path / STUDY_FILE
            if storage.path.exists():
                shutil.copy2(storage.path, work)
            url = SQLITE + str(work)
        else:
            storage.path.parent.mkdir(parents=True, exist_ok=True)  # the default's build/ (storage_path checked)
        try:
            study = open_study(url, name, setting, space, args.sampler)
        except StudyMismatch as exc:
            raise CLIError(f"--study: {exc}") from None
        from pezo.boards.flow.explore import finished

        before = finished(study)
        bar = None
        if not args.quiet and args.trials > before:
            from tqdm import tqdm

            bar = tqdm(total=args.trials, initial=min(before, args.trials), desc="explore", unit="trial")
        best, told = [], []

        def on_trial(result):
            told.append(result["state"])
            if result["state"] == "complete" and "accuracy" in result["values"]:
                best.append(result["values"]["accuracy"])
            if bar is not None:
                bar.update(1)
                if best:  # a person reads it: %, as front.md
                    bar.set_postfix_str(f"best validation accuracy {100 * max(best):.1f}%")

        try:
            try:
                ran = run_study(study, setting, space, args.trials, executor, on_trial)
            finally:
                if bar is not None:
                    bar.close()
            summary, written = write_outputs(study, setting, staging.path, storage.url)
        except BaseException:
            if storage.in_out and told and _written_by_explore(out):
                _keep_finished_trials(work, out, what)
            raise
    summary.update(out=str(out), ran_this_run=ran, resumed_from=before)
    if args.json:
        print(json.dumps(summary, indent=1, default=str))
        return 0
    print((out / "front.md").read_text())
    print(
        f"study {name} in {storage.url}: {ran} trials run now, {before} before "
        f"({summary['counts']['complete']} complete, {summary['counts']['pruned']} pruned)"
    )
    for p in written:
        print(f"wrote {out / p.name}")
    return 0


def add_parsers(sub) -> None:
    from pezo.boards.flow.explore import DEFAULT_OBJECTIVES, OBJECTIVES, SAMPLERS, SPACE_KEYS

    p = sub.add_parser(
        "explore",
        help="design-space explorer: accuracy x LUT/FF/BRAM x power x cycles of "
        "perturbation configurations, a Pareto front (Optuna on SQLite, trials on Dask)",
        description="Search the perturbation configuration (strategy, n_rngs, rng_bits, pool_size, "
        "pool_bits, lanes, banks, eps_shift) for the Pareto front of a short golden ZO run's accuracy "
        "against the stream unit's Yosys resources (and the activity proxy, the engine's cycles). "
        "Resumable: the same command continues its study after Ctrl-C.",
    )
    p.add_argument(
        "--task",
        default="digits",
        help="the training task of every trial (digits, digits-rot30, "
        "digits-rot45, rotten_tomatoes, bbc_news; default digits)",
    )
    p.add_argument(
        "--trials",
        type=raw,
        default=24,
        help=f"finished trials the study should hold, 1..{MAX_TRIALS} (a rerun continues up to it; default 24)",
    )
    p.add_argument(
        "--space",
        type=Path,
        default=None,
        help="JSON search space: an object with any of "
        f'{", ".join(SPACE_KEYS)}; a list = a categorical choice, {{"low": L, "high": H}} an '
        "integer range (default: the built-in space, gcd traps included)",
    )
    p.add_argument(
        "--objectives",
        default=",".join(DEFAULT_OBJECTIVES),
        help=f"comma-separated subset of {', '.join(OBJECTIVES)} (default {','.join(DEFAULT_OBJECTIVES)})",
    )
    p.add_argument(
        "--storage",
        default=None,
        help=f"Optuna storage, sqlite:///PATH in an existing directory "
        f"(default: {STUDY_FILE} inside --out when --out is given, written with the outputs; else "
        f"{DEFAULT_STORAGE})",
    )
    p.add_argument(
        "--study",
        default=None,
        help="study name (default: one derived from task, steps, seed, "
        "objectives and space, so the same command resumes it)",
    )
    p.add_argument(
        "--sampler", default="tpe", help=f"{', '.join(SAMPLERS)}: Optuna's multi-objective TPE or NSGA-II (default tpe)"
    )
    p.add_argument(
        "--steps",
        type=raw,
        default=3000,
        help="MeZO steps of every trial's training run (default 3000: about 2 s on digits)",
    )
    p.add_argument("--seed", type=raw, default=1, help="seed of the training runs and of the sampler (default 1)")
    add_executor_args(p, "trials")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"output directory (default {DEFAULT_OUT}): front.md, "
        f"front.csv, front.json, trials.csv, front.png (and {STUDY_FILE}, the study, without --storage)",
    )
    p.add_argument("--force", action="store_true", help="replace an --out pezo did not write")
    p.add_argument(
        "--json", action="store_true", help="print one JSON object: pareto, trials, study, storage, counts, setting"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_explore)
