"""The seed-method comparison (``pezo sweep --methods``): every method on the same tasks and seeds.

Rows: ``mezo``, ``poormans`` and ``sign-m-spsa`` once each; ``elasticzo`` and ``elasticzo-int8`` once
per split -- Full ZO (C = L), Cls2 (C = L-1), Cls1 (C = L-2), Full BP (C = 0), ElasticZO's Table 1/2
rows (splits a net is too shallow for are left out). Every run is ``pezo.golden.methods.registry.train_method`` with
the sweep's base ``MethodConfig`` (steps, batch, hidden widths, family) and its own method, split,
task and seed; method-specific defaults (lr, eps, queries) apply unless the base sets them.

Outputs: ``methods.json`` (every run's summary + the aggregated rows), ``methods.csv`` (one row per
aggregated line), ``methods.md`` (mean +- sample std over seeds: test accuracy, start accuracy,
forward passes per run, forward-equivalents (MACs / full forward), memory by the papers' calculators,
ElasticZO-INT8's integer-vs-float sign agreement) and ``methods.png`` (accuracy bars per task).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from pezo.executor import SERIAL
from pezo.golden.methods.registry import train_method
from pezo.golden.sweep.stats import mean_std, percent_cell

ELASTIC_SPLITS = ("full-zo", "cls2", "cls1", "full-bp")
SPLIT_LABELS = {"full-zo": "Full ZO", "cls2": "ZO-Feat-Cls2", "cls1": "ZO-Feat-Cls1", "full-bp": "Full BP"}


@dataclass(frozen=True)
class MethodJob:
    task: str
    method: str
    split: str
    seed: int

    @property
    def label(self) -> str:
        if self.method.startswith("elasticzo"):
            return f"{self.method} {SPLIT_LABELS[self.split]}"
        return self.method


def jobs_for(methods, tasks, seeds, layers: int) -> list[MethodJob]:
    """Every run, grouped by (task, seed) so a worker reuses the task's cached data."""
    out = []
    for task in tasks:
        for seed in seeds:
            for method in methods:
                if method.startswith("elasticzo"):
                    depth = layers if task.startswith("digits") else 1
                    for split in ELASTIC_SPLITS:
                        # C = L-1 / L-2 must be a real split
                        if split == "cls1" and depth < 3 or split == "cls2" and depth < 2:
                            continue
                        out.append(MethodJob(task, method, split, seed))
                else:
                    out.append(MethodJob(task, method, "full-zo", seed))
    return out


def _run(args) -> dict:
    base, job = args
    config = base.replace(method=job.method, task=job.task, seed=job.seed, split=job.split)
    try:
        summary = train_method(config)
    except (ValueError, FloatingPointError) as exc:  # a refused or diverged configuration is a result
        summary = {"method": job.method, "task": job.task, "seed": job.seed, "error": str(exc)}
    summary.update(label=job.label, split=job.split)
    return summary


def run_methods(base, methods, tasks, seeds, executor=None, progress: bool = True) -> list[dict]:
    """Every run on ``executor`` (``pezo.executor.Executor``; None: in this process), in job order."""
    todo = jobs_for(methods, tasks, seeds, len(base.hidden) + 1)
    return (executor or SERIAL).map(_run, [(base, j) for j in todo], progress, "methods")


def aggregate(results: list[dict]) -> list[dict]:
    groups: dict = {}
    for r in results:
        groups.setdefault((r["task"], r["label"]), []).append(r)
    rows = []
    for (task, label), runs in groups.items():
        row = {
            "task": task,
            "label": label,
            "method": runs[0]["method"],
            "split": runs[0].get("split"),
            "seeds": [r["seed"] for r in runs],
        }
        errors = [r["error"] for r in runs if "error" in r]
        if errors:
            row["error"] = errors[0]
            rows.append(row)
            continue
        row["test_accuracy"], row["test_accuracy_std"] = mean_std(r["test_accuracy"] for r in runs)
        row["start_accuracy"], _ = mean_std(r["start_accuracy"] for r in runs)
        row["forward_passes"] = runs[0]["forward_passes"]
        row["forward_equivalents"] = runs[0]["forward_equivalents"]
        row["steps"] = runs[0]["steps"]
        row["memory_bytes"] = runs[0]["memory_bytes"]["total"]
        row["memory_formula"] = runs[0]["memory_bytes"]["formula"]
        row["seconds_per_step"], _ = mean_std(r["seconds_per_step"] for r in runs)
        row["sign_agreement"], _ = mean_std(r["method_details"].get("sign_agreement") for r in runs)
        rows.append(row)
    return rows


def markdown(rows: list[dict], base) -> str:
    lines = [
        f"Seed methods compared ({base.steps} steps, batch {base.batch_size}, MLP hidden "
        f"{list(base.hidden)}, family {base.family or 'each method’s own'}); "
        f"{'one seed (no spread)' if all(len(r['seeds']) < 2 for r in rows) else 'mean ± std over seeds'}.",
        "",
        "| task | method | test acc % | start % | forward passes | fwd-equivalents | memory KiB | "
        "int/float sign agree % |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['task']} | {r['label']} | error: {r['error']} | | | | | |")
            continue
        agree = "-" if r["sign_agreement"] is None else f"{100 * r['sign_agreement']:.1f}"
        accuracy = percent_cell(r["test_accuracy"], r["test_accuracy_std"], len(r["seeds"]))
        lines.append(
            f"| {r['task']} | {r['label']} | {accuracy} | "
            f"{100 * r['start_accuracy']:.1f} | {r['forward_passes']:,} | {r['forward_equivalents']:,.0f} | "
            f"{r['memory_bytes'] / 1024:.1f} | {agree} |"
        )
    lines += [
        "",
        "Memory: "
        + "; ".join(sorted({f"{r['label'].split()[0]}: {r['memory_formula']}" for r in rows if "error" not in r})),
    ]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(r["task"] for r in rows))
    fig, axes = plt.subplots(1, len(tasks), figsize=(5 + 1.2 * len(rows) / max(1, len(tasks)), 4.5), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        mine = [r for r in rows if r["task"] == task and "error" not in r]
        ax.bar(
            range(len(mine)),
            [100 * r["test_accuracy"] for r in mine],
            yerr=[100 * r["test_accuracy_std"] for r in mine],
            color="tab:blue",
            capsize=3,
        )
        ax.scatter(
            range(len(mine)),
            [100 * r["start_accuracy"] for r in mine],
            color="tab:red",
            marker="_",
            s=200,
            label="start",
            zorder=3,
        )
        ax.set_xticks(
            range(len(mine)),
            [r["label"].replace("elasticzo", "EZO") for r in mine],
            rotation=60,
            ha="right",
            fontsize=8,
        )
        ax.set_title(task)
        ax.set_ylabel("test accuracy %")
        ax.set_ylim(0, 100)
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(results: list[dict], base, out: Path) -> list[Path]:
    rows = aggregate(results)
    out = Path(out)
    paths = [out / "methods.json", out / "methods.csv", out / "methods.md", out / "methods.png"]
    paths[0].write_text(json.dumps({"base": base.to_dict(), "rows": rows, "runs": results}, indent=1, default=str))
    fields = [
        "task",
        "label",
        "method",
        "split",
        "test_accuracy",
        "test_accuracy_std",
        "start_accuracy",
        "forward_passes",
        "forward_equivalents",
        "memory_bytes",
        "sign_agreement",
        "seconds_per_step",
        "error",
    ]
    with paths[1].open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    paths[2].write_text(markdown(rows, base))
    plot(rows, paths[3])
    return paths
