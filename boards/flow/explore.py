"""The design-space explorer (``pezo explore``): accuracy x resources x power x cycles of perturbation
configurations, a Pareto front, on Optuna (multi-objective TPE or NSGA-II, RDB storage on SQLite) and the
executor of ``pezo.executor`` (Dask).

**A trial** is one ``PerturbConfig`` drawn from the search space (``DEFAULT_SPACE`` or a JSON file): the
strategy first, then only the fields that strategy reads (otf: n_rngs, rng_bits; pregen: pool_size,
pool_bits, lanes, banks; gaussian: lanes; all: eps_shift). ``evaluate`` computes its objectives, a pure
function of (configuration, ``Setting``):

* ``accuracy`` (maximised): the validation accuracy (the task's validation split, held out from the
  training data; never the test set) of the best-validation checkpoint of a short seeded golden MeZO run
  (``golden.methods``' ``train_method``, method ``mezo``) on the setting's task with the strategy's perturbation family
  (``pezo-otf`` / ``pezo-pregen`` / ``gaussian``, with the configuration's n_rngs, rng_bits / pool_size,
  pool_bits), epsilon = 2^-eps_shift (the stream's epsilon in units of its 1.0), the same steps and seed
  for every trial. lanes and banks change how values are delivered, not which: they move resources only.
  Every trial also records ``val_accuracy`` (= ``accuracy``) and ``test_accuracy`` (the same checkpoint's test
  accuracy, reported beside it, never optimised) as fractions; people read them as % (front.md, the progress
  bar, the ``*_pct`` columns of the CSVs, the plot).
* ``lut``, ``ff``, ``bram``, ``dsp`` (minimised): Yosys ``synth_xilinx -family xcup`` of the whole
  perturbation stream unit (``boards.flow.report.report(config, unit="stream")``, cached by config and source),
  with d = the run's trained parameter count.
* ``power`` (minimised): the switching-activity proxy per delivered value (``boards.flow.power``; a relative
  figure, not watts; an Icarus simulation, about as slow as the synthesis: not a default objective).
* ``cycles`` (minimised): the network engine's cycle bound per ZO step for the task's net (digits-mlp or
  rt-head) on an R x C PE array, C = the stream's lanes and R = ``rows`` (drawn from the space only with
  this objective) (``golden.engine.network.NetConfig.cycle_bound``); only otf and pregen have an engine, so
  a gaussian trial is pruned, and so is a C the net's layers do not tile (the engine does not pad).

A configuration its own validation refuses (``PerturbConfig``, the trainer's family, the stream unit's
scale LUT, the engine's tiling) or whose run diverges is **pruned** with the reason in the trial's
``reason`` attribute; a trial never crashes the study. The gcd traps stay in: every trial records
``distinct_perturbations`` and ``gcd`` (pregen: gcd(N, d), N / gcd distinct perturbations; otf:
gcd(n, 2^b - 1), rotation then gains less than n x), and the front table marks them.

**Studies** (``run_study``): the storage (SQLite URL) keeps every trial; ``trials`` is the study's target
of finished (complete + pruned) trials, so a rerun after Ctrl-C continues where it stopped (the trials in
flight at the interrupt are marked failed and are not counted) and two runs may fill one study together.
The study's settings (task, steps, seed, objectives, space) are stored with it; a run with other settings
is refused. Trials are asked in batches of the executor's workers and told as they finish; for a fixed
number of workers the sampler (seeded) draws the same configurations again.

**Why here** (``pezo.boards.flow``): a trial's objectives are the flow's own reports (``report``, the power
proxy through ``comparison_rows.stream_activity``) beside a golden training run, so the explorer sits on top of
the flow (the top layer of ``pezo.boards.flow``, beside ``comparison_table``) and below the CLI; it uses no
board target, and a package of its own would add a layer for one module.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from pezo.executor import interrupts_deferred, raise_if_interrupted
from pezo.golden.config import MAX_LANES, RNG_BITS_RANGE, STRATEGIES, PerturbConfig

OBJECTIVES = {
    "accuracy": "maximize",
    "lut": "minimize",
    "ff": "minimize",
    "bram": "minimize",
    "dsp": "minimize",
    "power": "minimize",
    "cycles": "minimize",
}
DEFAULT_OBJECTIVES = ("accuracy", "lut", "ff", "bram")
SAMPLERS = ("tpe", "nsga2")
FAMILY = {"otf": "pezo-otf", "pregen": "pezo-pregen", "gaussian": "gaussian"}
ENGINE_STREAMS = ("otf", "pregen")
"""The strategies the engine has a stream for (``golden.engine.zo_engine.ENGINE_STRATEGIES``)."""
FIELDS = {
    "otf": ("n_rngs", "rng_bits", "eps_shift"),
    "pregen": ("pool_size", "pool_bits", "lanes", "banks", "eps_shift"),
    "gaussian": ("lanes", "eps_shift"),
}
"""The configuration fields each strategy reads (the others are not drawn for it)."""
DEFAULT_SPACE = {
    "strategy": list(STRATEGIES),
    "n_rngs": [3, 5, 7, 15, 31, 32, 63],  # 3 | 2^b-1 for even b, 7 for b = 3k, 31 for b = 5k: traps
    "rng_bits": {"low": 4, "high": 14},  # PeZO: 8 and 14; 16 is a 64K-entry scale LUT (minutes of Yosys)
    "pool_size": [511, 1023, 2047, 4095, 4096, 4240, 8191],  # 4096 and 4240 share 64 / 848 with digits' d = 3392
    "pool_bits": {"low": 6, "high": 14},
    "lanes": [4, 8, 16],
    "banks": [1, 2, 4, 8],
    "eps_shift": {"low": 7, "high": 13},
    "rows": [4, 8, 16],  # the PE array's rows R (drawn only for the cycles objective)
}
"""The default search space: a list is a categorical choice, ``{"low", "high"}`` an integer range."""
SPACE_KEYS = tuple(DEFAULT_SPACE)


class SpaceError(ValueError):
    """A search space (file) that cannot be used: the message names the key."""


def check_space(space) -> dict:
    """``DEFAULT_SPACE`` updated by ``space`` (a dict), each value checked: ``strategy`` a non-empty list of
    strategies, every other key a non-empty list of integers or ``{"low": int, "high": int}`` with
    low <= high (``"log": true`` optional). SpaceError naming the key otherwise."""
    if not isinstance(space, dict):
        raise SpaceError(f"must be a JSON object of {', '.join(SPACE_KEYS)}, got {type(space).__name__}")
    if not space:
        raise SpaceError(f"is empty; give at least one of {', '.join(SPACE_KEYS)}")
    out = dict(DEFAULT_SPACE)
    for key, value in space.items():
        if key not in SPACE_KEYS:
            raise SpaceError(f"key {key!r} is not a search-space key ({', '.join(SPACE_KEYS)})")
        if key == "strategy":
            if not isinstance(value, list) or not value or any(v not in STRATEGIES for v in value):
                raise SpaceError(f"key 'strategy' must be a non-empty list of {', '.join(STRATEGIES)}, got {value!r}")
        elif isinstance(value, list):
            if not value or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
                raise SpaceError(
                    f'key {key!r} must be a non-empty list of integers or {{"low": L, "high": H}}, got {value!r}'
                )
        elif isinstance(value, dict):
            lo, hi = value.get("low"), value.get("high")
            if (
                set(value) - {"low", "high", "log"}
                or any(isinstance(v, bool) or not isinstance(v, int) for v in (lo, hi))
                or lo > hi
            ):
                raise SpaceError(f'key {key!r} must be {{"low": L, "high": H}} with integers L <= H, got {value!r}')
            if value.get("log") and lo < 1:
                raise SpaceError(f"key {key!r}: a log range needs low >= 1, got {value!r}")
        else:
            raise SpaceError(f'key {key!r} must be a list of integers or {{"low": L, "high": H}}, got {value!r}')
        if key != "strategy":
            check_bounds(key, value)
        out[key] = value
    return out


_WIDEST = {
    "strategy": "otf",
    "n_rngs": 1,
    "rng_bits": RNG_BITS_RANGE[1],
    "lanes": MAX_LANES,
    "banks": 1,
    "pool_size": 1,
}
"""A PerturbConfig in which no field narrows another's range (otf: the pool's relations to lanes do not bind;
the widest LFSR allows the most URNGs), so each field meets its own widest range."""


def check_bounds(key: str, value) -> None:
    """Every value of a list, and both ends of a range, must be one the field accepts for some configuration
    (the field's own validation: ``PerturbConfig``, the engine's ``NetConfig`` rows); SpaceError naming the
    key, the bound and the allowed range otherwise. Cross-field limits (n_rngs <= 2^b - 1, ...) stay per trial."""
    from pezo.golden.config import check_int
    from pezo.golden.engine.zo_engine import MAX_ROWS

    bounds = (
        [("value", v) for v in value] if isinstance(value, list) else [("low", value["low"]), ("high", value["high"])]
    )
    for name, bound in bounds:
        try:
            if key == "rows":
                check_int("rows", bound, 1, MAX_ROWS)
            else:
                PerturbConfig(**{**_WIDEST, key: bound})
        except ValueError as exc:
            raise SpaceError(f"key {key!r}: {name} {bound} is outside the allowed range ({exc})") from None


def load_space(path: Path) -> dict:
    """The search space of a JSON file (``check_space``); SpaceError for an empty or malformed file."""
    text = Path(path).read_text()
    if not text.strip():
        raise SpaceError("is empty; give a JSON object of " + ", ".join(SPACE_KEYS))
    try:
        space = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpaceError(f"is not JSON ({exc.msg} at line {exc.lineno})") from None
    return check_space(space)


def check_objectives(names) -> tuple[str, ...]:
    """The objectives as a tuple, each one of ``OBJECTIVES``, no repeats (ValueError naming the bad one)."""
    names = tuple(n.strip() for n in names if n.strip())
    if not names:
        raise ValueError(f"objectives must list at least one of {', '.join(OBJECTIVES)}")
    for name in names:
        if name not in OBJECTIVES:
            raise ValueError(f"objectives must be a comma-separated subset of {', '.join(OBJECTIVES)}, got {name!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"objectives must not repeat, got {','.join(names)}")
    return names


@dataclass(frozen=True)
class Setting:
    """What every trial of a study shares: the task, the training budget, the seed, the objectives."""

    task: str = "digits"
    steps: int = 3000
    seed: int = 1
    objectives: tuple = DEFAULT_OBJECTIVES

    def to_dict(self) -> dict:
        return {**asdict(self), "objectives": list(self.objectives)}


# -- one trial ----------------------------------------------------------------------------------------
def suggest(trial, space: dict, array: bool = False) -> dict:
    """Draw a configuration from ``space`` on an Optuna trial: the strategy, then the fields it reads; with
    ``array`` (the cycles objective) and an engine strategy also the PE array's ``rows``."""
    strategy = trial.suggest_categorical("strategy", list(space["strategy"]))
    params = {"strategy": strategy}
    names = FIELDS[strategy] + (("rows",) if array and strategy in ENGINE_STREAMS and "rows" in space else ())
    for name in names:
        value = space[name]
        if isinstance(value, list):
            params[name] = trial.suggest_categorical(name, list(value))
        else:
            params[name] = trial.suggest_int(name, value["low"], value["high"], log=bool(value.get("log")))
    return params


def config_of(params: dict, perturb_dim: int = 1) -> PerturbConfig:
    """The stream configuration of a trial's parameters (ValueError from its own validation); otf's lanes are
    its n_rngs."""
    fields = {k: v for k, v in params.items() if k != "rows"}
    if fields["strategy"] == "otf":
        fields["lanes"] = fields["n_rngs"]
        fields["banks"] = 1
    return PerturbConfig(rewind=True, perturb_dim=perturb_dim, **fields)


def _net(task: str) -> str:
    return "digits-mlp" if task.startswith("digits") else "rt-head"


def _pruned(reason: str, attrs: dict | None = None) -> dict:
    return {"state": "pruned", "reason": reason, "values": {}, "attrs": attrs or {}}


def evaluate(job: tuple) -> dict:
    """The objectives of one configuration: ``job = (params, setting)`` -> ``{"state": "complete" | "pruned",
    "values": {objective: value}, "attrs": {...}, "reason": why pruned}`` (module docstring). Library
    warnings (e.g. a power-of-two pool) go into ``attrs["warnings"]``, not to stderr."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _evaluate(job)
    if caught:
        result["attrs"]["warnings"] = sorted({str(w.message) for w in caught})
    return result


def _evaluate(job: tuple) -> dict:
    import numpy as np

    from pezo.boards.flow.report import report
    from pezo.boards.flow.synth import SynthesisError
    from pezo.golden.methods.base import MethodConfig
    from pezo.golden.methods.registry import train_method

    params, setting = job
    try:
        config_of(params)
    except ValueError as exc:
        return _pruned(f"config: {exc}")
    strategy = params["strategy"]
    options = {"otf": ("n_rngs", "rng_bits"), "pregen": ("pool_size", "pool_bits"), "gaussian": ()}[strategy]
    method = MethodConfig(
        method="mezo",
        task=setting.task,
        seed=setting.seed,
        steps=setting.steps,
        eval_every=max(1, setting.steps // 4),
        family=FAMILY[strategy],
        family_options=tuple((k, params[k]) for k in options),
        eps=2.0 ** -params["eps_shift"],
    )
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            run = train_method(method)
    except ValueError as exc:
        return _pruned(f"training: {exc}")
    except (FloatingPointError, OverflowError) as exc:
        return _pruned(f"diverged: {exc}")
    sampler = run.get("sampler") or {}
    d = int(sampler.get("dim") or run["trainable_params"])
    attrs = {
        "perturb_dim": d,
        "start_accuracy": run["start_accuracy"],
        "val_accuracy": float(run["best_val_accuracy"]),
        "test_accuracy": float(run["test_accuracy"]),
        "distinct_perturbations": sampler.get("distinct_perturbations"),
        "gcd": (
            math.gcd(params["pool_size"], d)
            if strategy == "pregen"
            else math.gcd(params["n_rngs"], (1 << params["rng_bits"]) - 1)
            if strategy == "otf"
            else None
        ),
    }
    values = {"accuracy": attrs["val_accuracy"]}  # the objective: validation, never test
    try:
        config = config_of(params, d)
        resources = report(config, unit="stream")
    except ValueError as exc:
        return _pruned(f"stream unit: {exc}", attrs)
    except SynthesisError as exc:  # e.g. a pool bank with more read ports than Yosys maps: kept, with the reason
        return _pruned(f"synthesis failed: {str(exc)[:300]}", attrs)
    values.update(lut=resources["LUT"], ff=resources["FF"], bram=resources["BRAM"], dsp=resources["DSP"])
    attrs.update(
        LUT=resources["LUT"],
        FF=resources["FF"],
        BRAM=resources["BRAM"],
        DSP=resources["DSP"],
        CARRY=resources.get("CARRY"),
    )
    if "cycles" in setting.objectives:
        from pezo.golden.engine.nets import net_config
        from pezo.golden.engine.zo_engine import ENGINE_STRATEGIES

        if strategy not in ENGINE_STRATEGIES:
            return _pruned(f"cycles: the engine has no {strategy} stream (only {', '.join(ENGINE_STRATEGIES)})", attrs)
        try:
            net = net_config(
                _net(setting.task),
                strategy=strategy,
                rows=params.get("rows", 8),
                cols=config.lanes,
                rng_bits=config.rng_bits,
                pool_size=config.pool_size,
                pool_bits=config.pool_bits,
                eps_shift=config.eps_shift,
            )
        except ValueError as exc:
            return _pruned(f"cycles: {exc}", attrs)
        values["cycles"] = attrs["cycles"] = int(net.cycle_bound())
    if "power" in setting.objectives:
        from pezo.boards.flow.comparison_rows import stream_activity

        proxy = stream_activity(config)
        values["power"] = attrs["activity_per_value"] = float(proxy["activity_per_value_synth_scaled"])
    return {"state": "complete", "values": {k: values[k] for k in setting.objectives}, "attrs": attrs, "reason": None}


# -- the study -------------------------------------------------------------------------------------------
def space_digest(space: dict) -> str:
    return hashlib.sha256(json.dumps(space, sort_keys=True).encode()).hexdigest()[:8]


def default_study_name(setting: Setting, space: dict) -> str:
    """A name that changes with every setting, so a rerun of the same command resumes the same study."""
    return (
        f"{setting.task}-{setting.steps}steps-seed{setting.seed}-{'+'.join(setting.objectives)}-"
        f"space{space_digest(space)}"
    )


class StudyMismatch(ValueError):
    """The named study exists with other settings (objectives, task, steps, seed or space)."""


def open_study(storage: str, name: str, setting: Setting, space: dict, sampler: str = "tpe"):
    """The Optuna study ``name`` in ``storage`` (created, or loaded when its settings match)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    seed = setting.seed
    chosen = (
        optuna.samplers.NSGAIISampler(seed=seed, population_size=8)
        if sampler == "nsga2"
        else optuna.samplers.TPESampler(seed=seed, n_startup_trials=8, constant_liar=True)
    )
    directions = [OBJECTIVES[o] for o in setting.objectives]
    study = optuna.create_study(
        storage=storage, study_name=name, directions=directions, sampler=chosen, load_if_exists=True
    )
    wanted = {"setting": setting.to_dict(), "space": space}
    stored = {k: study.user_attrs.get(k) for k in wanted}
    if stored["setting"] is None:
        for key, value in wanted.items():
            study.set_user_attr(key, value)
    elif stored != json.loads(json.dumps(wanted)):
        theirs = stored["setting"] or {}
        diff = [k for k in wanted["setting"] if theirs.get(k) != wanted["setting"][k]] or ["space"]
        raise StudyMismatch(
            f"study {name!r} in this storage was made with other settings ({', '.join(diff)}: "
            f"{', '.join(str(theirs.get(k, '...')) for k in diff if k != 'space')}); "
            "name another --study or give the same settings"
        )
    return study


def finished(study) -> int:
    from optuna.trial import TrialState

    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))


def run_study(
    study, setting: Setting, space: dict, trials: int, executor, on_trial: Callable[[dict], None] | None = None
) -> int:
    """Evaluate trials on ``executor`` until the study holds ``trials`` finished trials; returns how many
    this call finished. Each batch asks as many trials as the executor has workers; a trial is told as soon
    as it finishes. On any exception (Ctrl-C too) the trials still in flight are told FAIL, then it re-raises; a
    Ctrl-C waits for an ask or a tell in progress (``interrupts_deferred``), so no trial is left RUNNING."""
    from optuna.trial import TrialState

    done = 0
    while (left := trials - finished(study)) > 0:
        batch: list = []
        pending: set = set()
        try:
            for _ in range(min(left, executor.workers)):
                with interrupts_deferred():  # a trial asked is a trial in ``pending`` (told FAIL below)
                    batch.append(study.ask())
                    pending.add(len(batch) - 1)
            params = [suggest(t, space, "cycles" in setting.objectives) for t in batch]
            for i, result in executor.imap(evaluate, [(p, setting) for p in params]):
                trial = batch[i]
                with interrupts_deferred():  # told and out of ``pending`` together
                    for key, value in {**result["attrs"], "reason": result["reason"]}.items():
                        trial.set_user_attr(key, value)
                    if result["state"] == "complete":
                        study.tell(trial, [result["values"][o] for o in setting.objectives])
                    else:
                        study.tell(trial, state=TrialState.PRUNED)
                    pending.discard(i)
                done += 1
                if on_trial is not None:
                    on_trial(result)
                raise_if_interrupted()  # a Ctrl-C swallowed by a finaliser (SQLAlchemy's, inside Optuna)
        except BaseException:
            for i in pending:
                try:
                    study.tell(batch[i], state=TrialState.FAIL)
                except Exception:  # noqa: BLE001 - the storage may be what failed
                    pass
            raise
    return done


# -- outputs ---------------------------------------------------------------------------------------------
def trap(row: dict) -> str:
    """The gcd trap of a trial in words ('' when there is none)."""
    gcd = row.get("gcd")
    if not gcd or gcd == 1:
        return ""
    if row["params"]["strategy"] == "pregen":
        return f"gcd(N, d) = {gcd}: {row.get('distinct_perturbations')} distinct perturbations"
    return f"gcd(n, 2^b-1) = {gcd}"


def trial_rows(study, setting: Setting) -> list[dict]:
    """Every finished or failed trial: number, state, params, values (by objective name), attributes."""
    rows = []
    for t in study.get_trials(deepcopy=False):
        if t.state.name not in ("COMPLETE", "PRUNED", "FAIL"):
            continue
        values = dict(zip(setting.objectives, t.values)) if t.values is not None else {}
        rows.append(
            {
                "number": t.number,
                "state": t.state.name.lower(),
                "params": dict(t.params),
                "values": values,
                **{k: v for k, v in t.user_attrs.items()},
            }
        )
    for row in rows:
        row["trap"] = trap(row)
    return rows


def pareto_rows(study, setting: Setting) -> list[dict]:
    """The Pareto front (Optuna's best trials), best accuracy first."""
    numbers = {t.number for t in study.best_trials}
    rows = [r for r in trial_rows(study, setting) if r["number"] in numbers]
    return sorted(rows, key=lambda r: (-r["values"].get("accuracy", 0), r["values"].get("lut", 0), r["number"]))


def _params_text(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items() if k != "strategy")


def _value_text(name: str, value) -> str:
    if value is None:
        return "-"
    if name == "accuracy":
        return f"{100 * value:.1f}"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:.2f}" if isinstance(value, float) else f"{value:,}"


def front_markdown(front: list[dict], setting: Setting, study_name: str, counts: dict) -> str:
    cols = list(setting.objectives)
    lines = [
        f"Pareto front of study `{study_name}`: {len(front)} of {counts['complete']} complete trials "
        f"({counts['pruned']} pruned); task {setting.task}, {setting.steps} MeZO steps, seed {setting.seed}; "
        "accuracy = validation accuracy (%, the objective), test = the same checkpoint's test accuracy (%); "
        "resources = Yosys xcup of the stream unit (compare designs with each other; not Vivado).",
        "",
        "| trial | strategy | configuration | " + " | ".join(cols) + " | test | distinct perturbations | gcd trap |",
        "|---|---|---|" + "---|" * len(cols) + "---|---|---|",
    ]
    for r in front:
        lines.append(
            f"| {r['number']} | {r['params']['strategy']} | {_params_text(r['params'])} | "
            + " | ".join(_value_text(c, r["values"].get(c)) for c in cols)
            + f" | {_value_text('accuracy', r.get('test_accuracy'))}"
            + f" | {r.get('distinct_perturbations') or '-'} | {r['trap'] or '-'} |"
        )
    return "\n".join(lines) + "\n"


CSV_PARAMS = ("strategy", "n_rngs", "rng_bits", "pool_size", "pool_bits", "lanes", "banks", "eps_shift", "rows")


ACCURACIES = ("val_accuracy", "test_accuracy")
"""Every trial's accuracies (fractions, as in the JSON); the CSVs add each in % (``val_accuracy_pct``, ...)."""


def write_csv(rows: list[dict], setting: Setting, path: Path) -> None:
    """One row per trial: the objectives under their names (accuracy a fraction, as in the JSON), then the
    resources, ``val_accuracy`` / ``test_accuracy`` and the same in % (``*_pct``), the traps and the reason."""
    pct = [f"{name}_pct" for name in ACCURACIES]
    fields = [
        "number",
        "state",
        *CSV_PARAMS,
        *setting.objectives,
        "LUT",
        "FF",
        "BRAM",
        "DSP",
        *ACCURACIES,
        *pct,
        "distinct_perturbations",
        "gcd",
        "trap",
        "reason",
    ]
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            percent = {f"{name}_pct": round(100 * r[name], 2) for name in ACCURACIES if r.get(name) is not None}
            writer.writerow({**r, **r["params"], **r["values"], **percent})


def plot_front(rows: list[dict], front: list[dict], path: Path, title: str) -> None:
    """Validation accuracy (%) against LUT + FF (log), one colour per strategy, the front ringed, traps as x."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"otf": "tab:blue", "pregen": "tab:orange", "gaussian": "tab:green"}
    on_front = {r["number"] for r in front}
    fig, ax = plt.subplots(figsize=(7.5, 5))
    done = [r for r in rows if r["state"] == "complete" and "accuracy" in r["values"] and r.get("LUT") is not None]
    for strategy, colour in colours.items():
        mine = [r for r in done if r["params"]["strategy"] == strategy]
        if not mine:
            continue
        for marker, group in (("o", [r for r in mine if not r["trap"]]), ("X", [r for r in mine if r["trap"]])):
            if group:
                ax.scatter(
                    [r["LUT"] + r["FF"] for r in group],
                    [100 * r["values"]["accuracy"] for r in group],
                    c=colour,
                    marker=marker,
                    s=40,
                    alpha=0.75,
                    label=f"{strategy}{' (gcd trap)' if marker == 'X' else ''}",
                )
    front_pts = sorted((r["LUT"] + r["FF"], 100 * r["values"]["accuracy"]) for r in done if r["number"] in on_front)
    if front_pts:
        ax.scatter(
            *zip(*front_pts),
            s=140,
            facecolors="none",
            edgecolors="black",
            linewidths=1.5,
            label="Pareto front (all objectives)",
        )
    ax.set_xscale("log")
    ax.set_xlabel("LUT + FF of the stream unit (Yosys xcup)")
    ax.set_ylabel("validation accuracy (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def counts_of(rows: list[dict]) -> dict:
    return {state: sum(1 for r in rows if r["state"] == state) for state in ("complete", "pruned", "fail")}


def write_outputs(study, setting: Setting, directory: Path, storage: str) -> tuple[dict, list[Path]]:
    """front.md / front.csv / front.json, trials.csv and front.png in ``directory``; returns the summary
    (``pareto``, ``trials``, ``study``, ``storage``, ``counts``, ``setting``) and the paths."""
    directory = Path(directory)
    rows = trial_rows(study, setting)
    front = pareto_rows(study, setting)
    counts = counts_of(rows)
    summary = {
        "study": study.study_name,
        "storage": storage,
        "setting": setting.to_dict(),
        "counts": counts,
        "pareto": front,
        "trials": rows,
    }
    paths = [directory / n for n in ("front.md", "front.csv", "front.json", "trials.csv", "front.png")]
    paths[0].write_text(front_markdown(front, setting, study.study_name, counts))
    write_csv(front, setting, paths[1])
    paths[2].write_text(json.dumps(summary, indent=1, default=str) + "\n")
    write_csv(rows, setting, paths[3])
    plot_front(rows, front, paths[4], f"{study.study_name}: {counts['complete']} trials, front ringed")
    return summary, paths
