"""The validation-accuracy curves the accuracy benchmarks draw (PNG): per method the mean over its seeds as a line,
the seeds' minimum-maximum as a band."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_seed_bands(runs: dict, x_key: str, x_label: str, title: str, path: Path) -> None:
    """``runs``: label -> the runs of its seeds (each with a ``curve`` of dicts holding ``x_key`` and
    ``val_accuracy`` at the same points); writes ``path`` (PNG, 120 dpi)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, results in runs.items():
        xs = [c[x_key] for c in results[0]["curve"]]
        vals = np.array([[c["val_accuracy"] for c in r["curve"]] for r in results]) * 100
        ax.plot(xs, vals.mean(axis=0), label=f"{label} (mean of {len(results)})")
        ax.fill_between(xs, vals.min(axis=0), vals.max(axis=0), alpha=0.2)
    ax.set_xlabel(x_label)
    ax.set_ylabel("validation accuracy (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
