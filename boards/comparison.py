"""The main job's resource comparison: PeZO's on-the-fly sizes, bare and with rewind, beside Table 6."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from golden.config import PerturbConfig
from boards.report import PEZO_TABLE6, TOOL, report

PEZO_SIZES = ((32, 14), (32, 8), (31, 8))
PAPER_OTF = {(32, 8): "32 LUT / 449 FF", (32, 14): "32 LUT / 512 FF"}
COLUMNS = ("design", "strategy", "n_rngs", "rng_bits", "rewind", "LUT", "FF", "CARRY", "BRAM", "DSP",
           "budget_LUT", "budget_FF", "within_budget", "pezo_table6")


def comparison_configs(seed: int = 1) -> list[PerturbConfig]:
    """PeZO's on-the-fly sizes (bare and rewind) and PeZO's default pool (4095 x 12 bit over 8 BRAMs)."""
    otf = [PerturbConfig(n_rngs=n, rng_bits=b, seed=seed, rewind=rewind)
           for n, b in PEZO_SIZES for rewind in (False, True)]
    return otf + [PerturbConfig(strategy="pregen", seed=seed)]


def comparison_rows(configs, progress=None) -> list[dict]:
    """One row per config: resources (rewind rows show the overhead in ``overhead_*``)."""
    rows = []
    for config in configs:
        r = report(config)
        if config.strategy == "pregen":
            rows.append({"design": f"pregen {config.pool_size}x{config.pool_bits}b/{config.banks} banks",
                         "strategy": "pregen", "n_rngs": "", "rng_bits": "", "rewind": True,
                         **{k: r[k] for k in ("LUT", "FF", "CARRY", "BRAM", "DSP")},
                         "budget_LUT": "", "budget_FF": "", "budget_BRAM18": r["budget"]["BRAM18_equivalent"],
                         "within_budget": r["within_budget"], "pezo_table6": "16 FF + 8 BRAM"})
            if progress is not None:
                progress.update(1)
            continue
        row = {"design": f"otf {config.n_rngs} x {config.rng_bits}" + (" + rewind" if config.rewind else ""),
               "strategy": config.strategy, "n_rngs": config.n_rngs, "rng_bits": config.rng_bits,
               "rewind": config.rewind, **{k: r[k] for k in ("LUT", "FF", "CARRY", "BRAM", "DSP")},
               "budget_LUT": r["budget"]["LUT"], "budget_FF": r["budget"]["FF"],
               "within_budget": r["within_budget"],
               "pezo_table6": "" if config.rewind else PAPER_OTF.get((config.n_rngs, config.rng_bits), "")}
        if config.rewind:
            row.update(overhead_LUT=r["overhead"]["LUT"], overhead_FF=r["overhead"]["FF"])
        rows.append(row)
        if progress is not None:
            progress.update(1)
    return rows


def format_table(rows: list[dict]) -> str:
    head = (f"{'design':<24}{'LUT':>6}{'FF':>6}{'CARRY':>7}{'BRAM':>6}{'DSP':>5}   "
            f"{'budget (LUT/FF)':<28}{'PeZO Table 6 (Vivado)'}")
    lines = [f"Perturbation generators alone - {TOOL}.",
             "Yosys counts compare designs with each other; they are not Vivado utilisation.", "", head,
             "-" * len(head)]
    for row in rows:
        if row["strategy"] == "pregen":
            budget = f"BRAM18 = minimum {row['budget_BRAM18']}"
        elif row["rewind"]:
            budget = (f"+{row['overhead_LUT']}/+{row['overhead_FF']} <= "
                      f"+{row['budget_LUT']}/+{row['budget_FF']}")
        else:
            budget = f"<= {row['budget_LUT']}/{row['budget_FF']}"
        budget += " ok" if row["within_budget"] else " OVER"
        lines.append(f"{row['design']:<24}{row['LUT']:>6}{row['FF']:>6}{row['CARRY']:>7}{row['BRAM']:>6}"
                     f"{row['DSP']:>5}   {budget:<28}{row['pezo_table6']}")
    lines.append("")
    lines.append("PeZO Table 6 (ZCU102, Vivado), random-number generation part:")
    for paper in PEZO_TABLE6:
        lines.append(f"  {paper['design']:<40}{paper['LUT']:>8} LUT{paper['FF']:>7} FF{paper['BRAM']:>3} BRAM")
    return "\n".join(lines)


def write_tables(rows: list[dict], directory: Path) -> list[Path]:
    """resources.json, resources.csv and resources.png (LUT and FF per design, with Table 6)."""
    directory = Path(directory)
    payload = {"tool": TOOL, "rows": rows, "pezo_table6": PEZO_TABLE6}
    (directory / "resources.json").write_text(json.dumps(payload, indent=2) + "\n")
    with open(directory / "resources.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(COLUMNS) + ["overhead_LUT", "overhead_FF", "budget_BRAM18"])
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
    _plot(rows, directory / "resources.png")
    return [directory / name for name in ("resources.json", "resources.csv", "resources.png")]


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [r["design"] for r in rows] + [p["design"].split(":")[0] + ":\n" + p["design"].split(": ")[1]
                                            for p in PEZO_TABLE6]
    luts = [r["LUT"] for r in rows] + [p["LUT"] for p in PEZO_TABLE6]
    ffs = [r["FF"] for r in rows] + [p["FF"] for p in PEZO_TABLE6]
    fig, ax = plt.subplots(figsize=(12, 5))
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], [max(v, 0.8) for v in luts], width=0.4, label="LUT")
    ax.bar([x + 0.2 for x in xs], [max(v, 0.8) for v in ffs], width=0.4, label="FF")
    ax.axvline(len(rows) - 0.5, color="grey", linestyle="--")
    ax.text(len(rows) - 0.45, max(luts + ffs), "PeZO Table 6 (Vivado)", va="top", fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(list(xs), labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("count (log)")
    ax.set_title("Perturbation generators: pezo (Yosys xcup, out of context) vs PeZO Table 6")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
