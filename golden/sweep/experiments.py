"""PeZO's accuracy experiments at small scale: Table 3, Fig. 3 and Fig. 4 (``pezo sweep``).

* ``table3``: the six perturbation families (gaussian = MeZO, rademacher, uniform = U(-1,1) without
  norm matching, naive-int = the URNG's raw 14-bit integers, PeZO Table 3's collapsing row, pezo-pregen,
  pezo-otf at their defaults) for each k in ``shots``, over ``seeds``, and the reference line
  ``float-probe`` on every split: the float linear probe on the same k shots, its L2 chosen on the
  validation split (``pezo.golden.lm.probe.fit_linear_probe_val`` over ``L2_GRID``; test never seen).
  The table's main columns are the best-validation checkpoint's test accuracy (the trainer's
  ``test_accuracy``), each beside the last weights' (``final_test_accuracy``).
* ``fig3``: pezo-pregen with pool sizes 2^m - 1 (m = 8..16) and pezo-otf with 2^m - 1 RNGs
  (m = 2..6) -- the paper's "2^m" means 2^m - 1 (Sec. 3.1).
* ``fig4``: pezo-otf with RNG widths b = 4..16 (31 RNGs; 2^(b-1) - 1 for b < 6, where 31 RNGs either
  exceed the LFSR's period or divide it: 31 | 2^5 - 1 makes every perturbation the same vector).

A run whose configuration is refused (e.g. a start step that is a multiple of the LFSR period, so
every perturbation is identical) or whose loss stops being finite (``FloatingPointError``) is kept as a
row with its ``error`` and no accuracy.

Every run is ``pezo.golden.zo.trainer.train`` with the sweep's base ``TrainConfig`` (same steps, lr,
eps, trainable set for all) and its own family, options, k and seed; a split's frozen prefix is
computed once per worker (jobs are grouped by split); the runs go through ``pezo.executor``. Outputs:
``sweep.json`` (every run's summary + the aggregates), ``sweep.csv`` (one row per run), ``table3.md`` /
``fig3.md`` / ``fig4.md`` (mean +- sample std over seeds, ``stats``) and ``fig3.png`` / ``fig4.png`` /
``table3.png``.
"""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pezo.executor import SERIAL
from pezo.golden.lm.probe import fit_linear_probe_val
from pezo.golden.rng.pool import gaussian_expected_norm
from pezo.golden.sweep.stats import mean_std, percent_cell
from pezo.golden.zo.families import FAMILIES
from pezo.golden.zo.trainer import ZOTask, sampler_for, train

EXPERIMENTS = ("table3", "fig3", "fig4")
POOL_EXPONENTS = tuple(range(8, 17))
RNG_EXPONENTS = tuple(range(2, 7))
RNG_WIDTHS = tuple(range(4, 17))
PROBE = "float-probe"
"""table3's reference row: the float linear probe with L2 chosen on validation (``probe_reference``)."""
COLLAPSE_POINTS = 5.0
"""table3 marks a family collapsed at k when its mean final test accuracy is within this many points of
the best constant prediction on the test split (the majority class's share, ``constant_accuracy`` of the
float-probe rows): the run ends no better than a classifier that ignores its input. (Not 1 / classes:
Rotten Tomatoes is 42 % / 58 %, so a constant "positive" scores ~58.5 % on its test splits.)"""
NORM_SAMPLES = 20
"""Perturbations averaged for table3's ||z|| / E||N(0, I_d)|| column."""


@dataclass(frozen=True)
class Job:
    experiment: str
    label: str  # the x value or row name
    family: str
    options: tuple
    shots: int
    seed: int


def jobs_for(experiments, shots, seeds) -> list[Job]:
    """Every run of the experiments, grouped by split (shots, seed) so a worker reuses a prefix."""
    out = []
    for k in shots:
        for seed in seeds:
            if "table3" in experiments:
                out += [Job("table3", PROBE, PROBE, (), k, seed)] + [Job("table3", f, f, (), k, seed) for f in FAMILIES]
            if "fig3" in experiments:
                out += [
                    Job("fig3", f"pool 2^{m}-1", "pezo-pregen", (("pool_size", 2**m - 1),), k, seed)
                    for m in POOL_EXPONENTS
                ]
                out += [
                    Job("fig3", f"rngs 2^{m}-1", "pezo-otf", (("n_rngs", 2**m - 1),), k, seed) for m in RNG_EXPONENTS
                ]
            if "fig4" in experiments:
                out += [
                    Job("fig4", f"b={b}", "pezo-otf", (("n_rngs", fig4_rngs(b)), ("rng_bits", b)), k, seed)
                    for b in RNG_WIDTHS
                ]
    return out


def fig4_rngs(bits: int) -> int:
    """RNG count of the width sweep: 31, or 2^(b-1) - 1 below b = 6 (see the module docstring)."""
    return 31 if bits >= 6 else 2 ** (bits - 1) - 1


def probe_reference(config) -> dict:
    """The float linear probe on ``config``'s split (task, shots, seed): fitted on the k training shots'
    embeddings (the pretrained encoder, as ZO's frozen layers), L2 chosen on the validation split from
    ``pezo.golden.lm.probe.L2_GRID`` (ties: the larger L2), then scored once on test."""
    task = ZOTask(config.replace(family="gaussian", head_init="zeros"))
    split, labels = task.split, task.labels
    x = {name: task.embeddings(getattr(split, name), task.params) for name in ("train", "val", "test")}
    classes = len(task.data.classes)
    weight, bias, l2 = fit_linear_probe_val(
        x["train"], labels[split.train], x["val"], labels[split.val], classes, scale=config.head_scale
    )

    def accuracy(name):
        return float(((x[name] @ weight.T + bias).argmax(axis=1) == labels[getattr(split, name)]).mean())

    return {
        "family": PROBE,
        "task": config.task,
        "shots": config.shots,
        "seed": config.seed,
        "test_accuracy": accuracy("test"),
        "best_val_accuracy": accuracy("val"),
        "l2": l2,
        "classes": classes,
        "val_size": int(len(split.val)),
        # the reference level of table3's collapse column (a property of the split, used for no choice)
        "constant_accuracy": float(np.bincount(labels[split.test], minlength=classes).max() / len(split.test)),
    }


def norm_ratio(config, dim: int, count: int = NORM_SAMPLES) -> float:
    """Mean ||z|| of the run's first ``count`` perturbations over E||N(0, I_dim)|| (MeZO's norm)."""
    sampler = sampler_for(config, dim)
    norms = [float(np.linalg.norm(sampler.perturbation(t).astype(np.float64))) for t in range(count)]
    return sum(norms) / count / gaussian_expected_norm(dim)


def _run(args) -> dict:
    base, job = args
    config = base.replace(
        family=job.family if job.family != PROBE else base.family,
        family_options=job.options,
        shots=job.shots,
        seed=job.seed,
    )
    if job.family == PROBE:
        summary = probe_reference(config)
        summary.update(experiment=job.experiment, label=job.label)
        return summary
    try:
        summary = train(config).summary
    except (ValueError, FloatingPointError) as exc:  # refused or diverged: a result of the sweep, not a crash
        summary = {
            "family": job.family,
            "task": base.task,
            "shots": job.shots,
            "steps": base.steps,
            "seed": job.seed,
            "error": str(exc),
            "sampler": {"options": dict(job.options)},
        }
    else:
        if job.experiment == "table3":
            summary["norm_ratio"] = norm_ratio(config, summary["trainable_params"])
    summary.update(experiment=job.experiment, label=job.label)
    return summary


def run_sweep(
    base, experiments=EXPERIMENTS, shots=(16, 256), seeds=(1, 2, 3), executor=None, progress: bool = True
) -> list[dict]:
    """Run every job on ``executor`` (``pezo.executor.Executor``; None: in this process); summaries in job
    order, the same on every executor."""
    todo = jobs_for(experiments, shots, seeds)
    # contiguous chunks: one worker walks one split's jobs in order and reuses its prefix cache
    return (executor or SERIAL).map(
        _run, [(base, j) for j in todo], progress, "sweep", chunksize=max(1, len(todo) // (len(shots) * len(seeds)))
    )


# -- aggregation and outputs ------------------------------------------------------------------------


def aggregate(results: list[dict]) -> list[dict]:
    """One row per (experiment, label, shots): mean/std over seeds of the accuracies and end loss."""
    groups: dict = {}
    for r in results:
        groups.setdefault((r["experiment"], r["label"], r["shots"]), []).append(r)
    rows = []
    for (experiment, label, shots), runs in groups.items():
        if any("error" in r for r in runs):
            rows.append(
                {
                    "experiment": experiment,
                    "label": label,
                    "family": runs[0]["family"],
                    "shots": shots,
                    "seeds": [r["seed"] for r in runs],
                    "error": next(r["error"] for r in runs if "error" in r),
                    "options": runs[0]["sampler"].get("options", {}),
                }
            )
            continue
        acc = mean_std(r["test_accuracy"] for r in runs)
        if runs[0]["family"] == PROBE:
            rows.append(
                {
                    "experiment": experiment,
                    "label": label,
                    "family": PROBE,
                    "shots": shots,
                    "seeds": [r["seed"] for r in runs],
                    "test_accuracy_mean": acc[0],
                    "test_accuracy_std": acc[1],
                    "l2": [r["l2"] for r in runs],
                    "classes": runs[0]["classes"],
                    "constant_accuracy_mean": statistics.fmean(r["constant_accuracy"] for r in runs),
                    "val_size": runs[0]["val_size"],
                    "options": {},
                }
            )
            continue
        start = mean_std(r["start_accuracy"] for r in runs)
        final = mean_std(r["final_test_accuracy"] for r in runs)
        loss = mean_std(r["train_loss_end"] for r in runs)
        loss_start = mean_std(r["train_loss_start"] for r in runs)
        row = {
            "experiment": experiment,
            "label": label,
            "family": runs[0]["family"],
            "shots": shots,
            "seeds": [r["seed"] for r in runs],
            "test_accuracy_mean": acc[0],
            "test_accuracy_std": acc[1],
            "final_test_accuracy_mean": final[0],
            "final_test_accuracy_std": final[1],
            "best_step_zero": sum(r["best_step"] == 0 for r in runs),
            "start_accuracy_mean": start[0],
            "start_accuracy_std": start[1],
            "train_loss_start_mean": loss_start[0],
            "train_loss_start_std": loss_start[1],
            "train_loss_end_mean": loss[0],
            "train_loss_end_std": loss[1],
            "distinct_perturbations": runs[0]["sampler"].get("distinct_perturbations"),
            "options": runs[0]["sampler"].get("options", {}),
        }
        if all("norm_ratio" in r for r in runs):
            row["norm_ratio_mean"] = statistics.fmean(r["norm_ratio"] for r in runs)
        rows.append(row)
    return rows


def _spread(rows) -> str:
    """The table caption's 'over seeds' phrase: the seed count, or that one seed has no spread."""
    counts = {len(r["seeds"]) for r in rows if "error" not in r}
    if counts == {1}:
        return "one seed (no spread)"
    return f"mean ± std over {'/'.join(map(str, sorted(counts)))} seeds" if counts else "mean ± std over seeds"


def collapsed_at(rows, family: str) -> list[int] | None:
    """The k values at which ``family``'s mean final test accuracy is within ``COLLAPSE_POINTS`` of the best
    constant prediction (mean ``constant_accuracy`` of the float-probe rows of the same k); None without them."""
    out = []
    for r in rows:
        if r["experiment"] != "table3" or r["family"] != family or "error" in r:
            continue
        probe = [
            p
            for p in rows
            if p["experiment"] == "table3" and p["family"] == PROBE and p["shots"] == r["shots"] and "error" not in p
        ]
        if not probe:
            return None
        if 100 * r["final_test_accuracy_mean"] <= 100 * probe[0]["constant_accuracy_mean"] + COLLAPSE_POINTS:
            out.append(r["shots"])
    return sorted(out)


def table3_markdown(rows, base) -> str:
    table = [r for r in rows if r["experiment"] == "table3"]
    shots = sorted({r["shots"] for r in table})
    probes = [r for r in table if r["family"] == PROBE and "error" not in r]
    classes = probes[0]["classes"] if probes else None
    val = ", ".join(f"{r['val_size']} at k={r['shots']}" for r in sorted(probes, key=lambda r: r["shots"]))
    ks = "/".join(map(str, shots))
    lines = [
        f"Test accuracy (%) after {base.steps} ZO steps, {_spread(table)}; task {base.task}, "
        f"trainable {base.trainable}, lr {base.lr:g}, eps {base.eps:g}, batch {base.batch_size}.",
        "",
        "**Main column `k=K`: the test accuracy of the best-validation checkpoint** (validation every "
        f"{base.eval_every} steps, ties keep the earlier step; validation examples: {val or 'k per class'}); "
        "`(n@0)`: n runs whose best checkpoint is step 0, i.e. the start weights (test = start). "
        f"`final`: the last weights' test accuracy (step {base.steps}). "
        "`float-probe`: the reference line, the float linear probe on the same k shots with L2 chosen on "
        "validation (golden.lm.probe.L2_GRID, 17 values 1e-3..1e5; test never used), one fit per split. "
        f"`‖z‖/MeZO`: mean ‖z‖ of {NORM_SAMPLES} perturbations over E‖N(0, I_d)‖. "
        f"`ℓ± start`: mean loss of the ± passes over the first 20 steps (the unperturbed zero head: ln C"
        + (f" = {np.log(classes):.3f}" if classes else "")
        + "). "
        "`Δ final`: mean final accuracy minus gaussian's (MeZO's), in points. "
        f"`collapses`: the k at which the mean final accuracy is within {COLLAPSE_POINTS:g} points of the best "
        "constant prediction on test (the majority class: "
        + ", ".join(
            f"{100 * r['constant_accuracy_mean']:.1f} % at k={r['shots']}"
            for r in sorted(probes, key=lambda r: r["shots"])
        )
        + "), what a collapsed classifier scores.",
        "",
        "| family | ‖z‖/MeZO | "
        + " | ".join(f"k={k} | k={k} final" for k in shots)
        + f" | Δ final (k={ks}) | ℓ± start (k={ks}) | start (k={ks}) | collapses |",
        "|---|---|" + "---|" * (2 * len(shots) + 4),
    ]
    mezo = {r["shots"]: r["final_test_accuracy_mean"] for r in table if r["family"] == "gaussian" and "error" not in r}
    for family in FAMILIES:
        cells, starts, losses, deltas, ratio = [], [], [], [], "-"
        for k in shots:
            match = [r for r in table if r["family"] == family and r["shots"] == k and "error" not in r]
            if not match:
                cells += ["-", "-"]
                starts.append("-")
                losses.append("-")
                deltas.append("-")
                continue
            r, seeds = match[0], len(match[0]["seeds"])
            at_zero = f" ({r['best_step_zero']}@0)" if r["best_step_zero"] else ""
            cells += [
                percent_cell(r["test_accuracy_mean"], r["test_accuracy_std"], seeds) + at_zero,
                percent_cell(r["final_test_accuracy_mean"], r["final_test_accuracy_std"], seeds),
            ]
            starts.append(f"{100 * r['start_accuracy_mean']:.1f}")
            deltas.append(
                "-"
                if family == "gaussian" or k not in mezo
                else f"{100 * (r['final_test_accuracy_mean'] - mezo[k]):+.1f}"
            )
            losses.append(f"{r['train_loss_start_mean']:.3g}")
            if "norm_ratio_mean" in r:
                ratio = f"{r['norm_ratio_mean']:.3g}"
        collapsed = collapsed_at(table, family)
        verdict = "-" if collapsed is None else ("no" if not collapsed else ", ".join(f"k={k}" for k in collapsed))
        lines.append(
            f"| {family} | {ratio} | "
            + " | ".join(cells)
            + f" | {' / '.join(deltas)} | {' / '.join(losses)} | {' / '.join(starts)} | {verdict} |"
        )
    if probes:
        cells = []
        for k in shots:
            match = [r for r in probes if r["shots"] == k]
            cells += (
                [
                    percent_cell(match[0]["test_accuracy_mean"], match[0]["test_accuracy_std"], len(match[0]["seeds"])),
                    "-",
                ]
                if match
                else ["-", "-"]
            )
        l2 = sorted({v for r in probes for v in r["l2"]})
        lines.append(
            f"| {PROBE} (L2 on val: {', '.join(f'{v:g}' for v in l2)}) | - | "
            + " | ".join(cells)
            + " | - | - | - | - |"
        )
    return "\n".join(lines) + "\n"


def figure_markdown(rows, experiment: str) -> str:
    lines = [
        "| setting | family | k | test accuracy (%) | final train loss | distinct perturbations |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["experiment"] == experiment and "error" in r:
            lines.append(f"| {r['label']} | {r['family']} | {r['shots']} | refused: {r['error']} | - | - |")
        elif r["experiment"] == experiment:
            seeds = len(r["seeds"])
            loss = f"{r['train_loss_end_mean']:.4f}" + ("" if seeds < 2 else f" ± {r['train_loss_end_std']:.4f}")
            distinct = r["distinct_perturbations"]
            lines.append(
                f"| {r['label']} | {r['family']} | {r['shots']} | "
                f"{percent_cell(r['test_accuracy_mean'], r['test_accuracy_std'], seeds)} | {loss} | "
                f"{distinct if distinct is not None else '-'} |"
            )
    return "\n".join(lines) + "\n"


def _plot(rows, experiment: str, path: Path, base) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = [r for r in rows if r["experiment"] == experiment and "error" not in r]
    shots = sorted({r["shots"] for r in chosen})
    if experiment == "table3":
        fig, ax = plt.subplots(figsize=(8.5, 4.5))
        width = 0.8 / max(1, len(shots))
        for j, k in enumerate(shots):
            mine = {f: next((r for r in chosen if r["family"] == f and r["shots"] == k), None) for f in FAMILIES}
            xs = [i + j * width for i in range(len(FAMILIES))]
            bars = ax.bar(
                xs,
                [100 * r["test_accuracy_mean"] if r else 0 for r in mine.values()],
                width,
                yerr=[100 * r["test_accuracy_std"] if r else 0 for r in mine.values()],
                label=f"k={k} best-val",
                capsize=3,
            )
            ax.plot(
                xs,
                [100 * r["final_test_accuracy_mean"] if r else np.nan for r in mine.values()],
                "kx",
                label="final" if j == 0 else None,
            )
            probe = next((r for r in chosen if r["family"] == PROBE and r["shots"] == k), None)
            if probe:
                ax.axhline(
                    100 * probe["test_accuracy_mean"],
                    color=bars.patches[0].get_facecolor(),
                    ls="--",
                    lw=1,
                    label=f"float probe k={k} (L2 on val)",
                )
        ax.set_xticks([i + width * (len(shots) - 1) / 2 for i in range(len(FAMILIES))], FAMILIES, fontsize=8)
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"Table 3 analogue: {base.task}, {base.steps} ZO steps")
        ax.legend(fontsize=7, loc="lower right")
    else:
        panels = (
            [("pezo-pregen", "log2(pool size + 1)"), ("pezo-otf", "log2(RNGs + 1)")]
            if experiment == "fig3"
            else [("pezo-otf", "RNG bit width b")]
        )
        fig, axes = plt.subplots(2, len(panels), figsize=(5.5 * len(panels), 6.5), squeeze=False)
        for col, (family, xlabel) in enumerate(panels):
            for k in shots:
                pts = [r for r in chosen if r["family"] == family and r["shots"] == k]
                xs = [_x(r, experiment) for r in pts]
                axes[0][col].errorbar(
                    xs,
                    [100 * r["test_accuracy_mean"] for r in pts],
                    yerr=[100 * r["test_accuracy_std"] for r in pts],
                    marker="o",
                    capsize=3,
                    label=f"k={k}",
                )
                axes[1][col].errorbar(
                    xs,
                    [r["train_loss_end_mean"] for r in pts],
                    yerr=[r["train_loss_end_std"] for r in pts],
                    marker="o",
                    capsize=3,
                    label=f"k={k}",
                )
            axes[0][col].set_ylabel("test accuracy (%)")
            axes[1][col].set_ylabel("final train loss")
            axes[1][col].set_xlabel(xlabel)
            axes[0][col].set_title(family)
            axes[0][col].legend()
        fig.suptitle(f"{'Fig. 3' if experiment == 'fig3' else 'Fig. 4'} analogue: {base.task}, {base.steps} ZO steps")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _x(row, experiment):
    options = row["options"]
    if experiment == "fig4":
        return options["rng_bits"]
    size = options.get("pool_size", options.get("n_rngs"))
    return (size + 1).bit_length() - 1


def write_outputs(results: list[dict], base, directory: Path) -> list[Path]:
    """Write sweep.json/csv, the markdown tables and the PNGs of the experiments present."""
    rows = aggregate(results)
    directory = Path(directory)
    written = []
    (directory / "sweep.json").write_text(
        json.dumps({"base": base.to_dict(), "aggregates": rows, "runs": results}, indent=1) + "\n"
    )
    written.append(directory / "sweep.json")
    fields = [
        "experiment",
        "label",
        "family",
        "shots",
        "seed",
        "test_accuracy",
        "start_accuracy",
        "final_test_accuracy",
        "best_step",
        "best_val_accuracy",
        "train_loss_start",
        "train_loss_end",
        "seconds_per_step",
        "trainable_params",
        "norm_ratio",
        "l2",
    ]
    with open(directory / "sweep.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(results)
    written.append(directory / "sweep.csv")
    for experiment in EXPERIMENTS:
        if not any(r["experiment"] == experiment for r in rows):
            continue
        text = table3_markdown(rows, base) if experiment == "table3" else figure_markdown(rows, experiment)
        (directory / f"{experiment}.md").write_text(text)
        _plot(rows, experiment, directory / f"{experiment}.png", base)
        written += [directory / f"{experiment}.md", directory / f"{experiment}.png"]
    return written
