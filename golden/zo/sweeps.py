"""PeZO's accuracy experiments at small scale: Table 3, Fig. 3 and Fig. 4 (``pezo sweep``).

* ``table3``: the five perturbation families (gaussian = MeZO, rademacher, uniform = naive U(-1,1),
  pezo-pregen, pezo-otf at their defaults) for each k in ``shots``, over ``seeds``.
* ``fig3``: pezo-pregen with pool sizes 2^m - 1 (m = 8..16) and pezo-otf with 2^m - 1 RNGs
  (m = 2..6) -- the paper's "2^m" means 2^m - 1 (Sec. 3.1).
* ``fig4``: pezo-otf with RNG widths b = 4..16 (31 RNGs; 2^(b-1) - 1 for b < 6, where 31 RNGs either
  exceed the LFSR's period or divide it: 31 | 2^5 - 1 makes every perturbation the same vector).

A run whose configuration is refused (e.g. a start step that is a multiple of the LFSR period, so
every perturbation is identical) is kept as a row with its ``error`` and no accuracy.

Every run is ``pezo.golden.zo.trainer.train`` with the sweep's base ``TrainConfig`` (same steps, lr,
eps, trainable set for all) and its own family, options, k and seed; a split's frozen prefix is
computed once per worker (jobs are grouped by split); the runs go through ``pezo.executor``. Outputs: ``sweep.json`` (every run's summary
+ the aggregates), ``sweep.csv`` (one row per run), ``table3.md`` / ``fig3.md`` / ``fig4.md`` (mean
+- sample std over seeds) and ``fig3.png`` / ``fig4.png`` / ``table3.png``.
"""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from pezo.executor import SERIAL
from pezo.golden.zo.families import FAMILIES
from pezo.golden.zo.trainer import train

EXPERIMENTS = ("table3", "fig3", "fig4")
POOL_EXPONENTS = tuple(range(8, 17))
RNG_EXPONENTS = tuple(range(2, 7))
RNG_WIDTHS = tuple(range(4, 17))


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
                out += [Job("table3", f, f, (), k, seed) for f in FAMILIES]
            if "fig3" in experiments:
                out += [Job("fig3", f"pool 2^{m}-1", "pezo-pregen", (("pool_size", 2 ** m - 1),), k, seed)
                        for m in POOL_EXPONENTS]
                out += [Job("fig3", f"rngs 2^{m}-1", "pezo-otf", (("n_rngs", 2 ** m - 1),), k, seed)
                        for m in RNG_EXPONENTS]
            if "fig4" in experiments:
                out += [Job("fig4", f"b={b}", "pezo-otf",
                            (("n_rngs", fig4_rngs(b)), ("rng_bits", b)), k, seed) for b in RNG_WIDTHS]
    return out


def fig4_rngs(bits: int) -> int:
    """RNG count of the width sweep: 31, or 2^(b-1) - 1 below b = 6 (see the module docstring)."""
    return 31 if bits >= 6 else 2 ** (bits - 1) - 1


def _run(args) -> dict:
    base, job = args
    config = base.replace(family=job.family, family_options=job.options, shots=job.shots, seed=job.seed)
    try:
        summary = train(config).summary
    except ValueError as exc:  # a refused configuration is a result of the sweep, not a crash
        summary = {"family": job.family, "task": base.task, "shots": job.shots, "steps": base.steps,
                   "seed": job.seed, "error": str(exc), "sampler": {"options": dict(job.options)}}
    summary.update(experiment=job.experiment, label=job.label)
    return summary


def run_sweep(base, experiments=EXPERIMENTS, shots=(16, 256), seeds=(1, 2, 3), executor=None,
              progress: bool = True) -> list[dict]:
    """Run every job on ``executor`` (``pezo.executor.Executor``; None: in this process); summaries in job
    order, the same on every executor."""
    todo = jobs_for(experiments, shots, seeds)
    # contiguous chunks: one worker walks one split's jobs in order and reuses its prefix cache
    return (executor or SERIAL).map(_run, [(base, j) for j in todo], progress, "sweep",
                                    chunksize=max(1, len(todo) // (len(shots) * len(seeds))))


# -- aggregation and outputs ------------------------------------------------------------------------

def _mean_std(values):
    values = list(values)
    mean = statistics.fmean(values)
    return mean, (statistics.stdev(values) if len(values) > 1 else 0.0)


def aggregate(results: list[dict]) -> list[dict]:
    """One row per (experiment, label, shots): mean/std over seeds of the accuracies and end loss."""
    groups: dict = {}
    for r in results:
        groups.setdefault((r["experiment"], r["label"], r["shots"]), []).append(r)
    rows = []
    for (experiment, label, shots), runs in groups.items():
        if any("error" in r for r in runs):
            rows.append({"experiment": experiment, "label": label, "family": runs[0]["family"], "shots": shots,
                         "seeds": [r["seed"] for r in runs], "error": next(r["error"] for r in runs if "error" in r),
                         "options": runs[0]["sampler"].get("options", {})})
            continue
        acc = _mean_std(r["test_accuracy"] for r in runs)
        start = _mean_std(r["start_accuracy"] for r in runs)
        loss = _mean_std(r["train_loss_end"] for r in runs)
        rows.append({"experiment": experiment, "label": label, "family": runs[0]["family"], "shots": shots,
                     "seeds": [r["seed"] for r in runs], "test_accuracy_mean": acc[0], "test_accuracy_std": acc[1],
                     "start_accuracy_mean": start[0], "start_accuracy_std": start[1],
                     "train_loss_end_mean": loss[0], "train_loss_end_std": loss[1],
                     "distinct_perturbations": runs[0]["sampler"].get("distinct_perturbations"),
                     "options": runs[0]["sampler"].get("options", {})})
    return rows


def _pct(mean, std, seeds: int = 2) -> str:
    """``mean ± std`` in percent; one seed has no spread, so its cell is the value alone (never ``± 0.0``)."""
    return f"{100 * mean:.1f}" if seeds < 2 else f"{100 * mean:.1f} ± {100 * std:.1f}"


def _spread(rows) -> str:
    """The table caption's 'over seeds' phrase: the seed count, or that one seed has no spread."""
    counts = {len(r["seeds"]) for r in rows if "error" not in r}
    if counts == {1}:
        return "one seed (no spread)"
    return f"mean ± std over {'/'.join(map(str, sorted(counts)))} seeds" if counts else "mean ± std over seeds"


def table3_markdown(rows, base) -> str:
    shots = sorted({r["shots"] for r in rows if r["experiment"] == "table3"})
    lines = [f"Test accuracy (%) after {base.steps} ZO steps, {_spread(rows)}; task {base.task}, "
             f"trainable {base.trainable}, lr {base.lr:g}, eps {base.eps:g}, batch {base.batch_size}.", "",
             "| family | " + " | ".join(f"k={k}" for k in shots) + " | start (k=" + "/".join(map(str, shots)) + ") |",
             "|---|" + "---|" * (len(shots) + 1)]
    for family in FAMILIES:
        cells, starts = [], []
        for k in shots:
            match = [r for r in rows if r["experiment"] == "table3" and r["family"] == family and r["shots"] == k]
            match = [r for r in match if "error" not in r]
            cells.append(_pct(match[0]["test_accuracy_mean"], match[0]["test_accuracy_std"], len(match[0]["seeds"]))
                         if match else "-")
            starts.append(f"{100 * match[0]['start_accuracy_mean']:.1f}" if match else "-")
        lines.append(f"| {family} | " + " | ".join(cells) + f" | {' / '.join(starts)} |")
    return "\n".join(lines) + "\n"


def figure_markdown(rows, experiment: str) -> str:
    lines = ["| setting | family | k | test accuracy (%) | final train loss | distinct perturbations |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        if r["experiment"] == experiment and "error" in r:
            lines.append(f"| {r['label']} | {r['family']} | {r['shots']} | refused: {r['error']} | - | - |")
        elif r["experiment"] == experiment:
            seeds = len(r["seeds"])
            loss = f"{r['train_loss_end_mean']:.4f}" + ("" if seeds < 2 else f" ± {r['train_loss_end_std']:.4f}")
            distinct = r["distinct_perturbations"]
            lines.append(f"| {r['label']} | {r['family']} | {r['shots']} | "
                         f"{_pct(r['test_accuracy_mean'], r['test_accuracy_std'], seeds)} | {loss} | "
                         f"{distinct if distinct is not None else '-'} |")
    return "\n".join(lines) + "\n"


def _plot(rows, experiment: str, path: Path, base) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = [r for r in rows if r["experiment"] == experiment and "error" not in r]
    shots = sorted({r["shots"] for r in chosen})
    if experiment == "table3":
        fig, ax = plt.subplots(figsize=(7, 4))
        width = 0.8 / max(1, len(shots))
        for j, k in enumerate(shots):
            means = [next((100 * r["test_accuracy_mean"] for r in chosen if r["family"] == f and r["shots"] == k), 0)
                     for f in FAMILIES]
            stds = [next((100 * r["test_accuracy_std"] for r in chosen if r["family"] == f and r["shots"] == k), 0)
                    for f in FAMILIES]
            ax.bar([i + j * width for i in range(len(FAMILIES))], means, width, yerr=stds, label=f"k={k}", capsize=3)
        ax.set_xticks([i + width * (len(shots) - 1) / 2 for i in range(len(FAMILIES))], FAMILIES)
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"Table 3 analogue: {base.task}, {base.steps} ZO steps")
        ax.legend()
    else:
        panels = [("pezo-pregen", "log2(pool size + 1)"), ("pezo-otf", "log2(RNGs + 1)")] if experiment == "fig3" \
            else [("pezo-otf", "RNG bit width b")]
        fig, axes = plt.subplots(2, len(panels), figsize=(5.5 * len(panels), 6.5), squeeze=False)
        for col, (family, xlabel) in enumerate(panels):
            for k in shots:
                pts = [r for r in chosen if r["family"] == family and r["shots"] == k]
                xs = [_x(r, experiment) for r in pts]
                axes[0][col].errorbar(xs, [100 * r["test_accuracy_mean"] for r in pts],
                                      yerr=[100 * r["test_accuracy_std"] for r in pts], marker="o", capsize=3,
                                      label=f"k={k}")
                axes[1][col].errorbar(xs, [r["train_loss_end_mean"] for r in pts],
                                      yerr=[r["train_loss_end_std"] for r in pts], marker="o", capsize=3,
                                      label=f"k={k}")
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
    (directory / "sweep.json").write_text(json.dumps({"base": base.to_dict(), "aggregates": rows,
                                                      "runs": results}, indent=1) + "\n")
    written.append(directory / "sweep.json")
    fields = ["experiment", "label", "family", "shots", "seed", "test_accuracy", "start_accuracy",
              "final_test_accuracy", "best_val_accuracy", "train_loss_start", "train_loss_end", "seconds_per_step",
              "trainable_params"]
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
