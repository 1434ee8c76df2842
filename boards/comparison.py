"""The main job's resource comparison: every perturbation strategy, generator alone and as a stream
unit, beside PeZO Table 6; and the three-way table at default sizes."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from golden.config import PerturbConfig
from boards.report import PEZO_TABLE6, TOOL, report

PEZO_SIZES = ((32, 14), (32, 8), (31, 8))
PAPER_OTF = {(32, 8): "32 LUT / 449 FF", (32, 14): "32 LUT / 512 FF"}
PAPER_PREGEN = "16 FF + 8 BRAM"
PAPER_MEZO = "133120 LUT / 69632 FF"
GAUSSIAN_SYNTHESISED = 32  # generators synthesised to extrapolate MeZO's 1024
ZCU102 = {"LUT": 274_080, "FF": 548_160, "BRAM36": 912}
COLUMNS = ("design", "strategy", "unit", "n_rngs", "rng_bits", "rewind", "LUT", "FF", "CARRY", "BRAM",
           "RAMB18", "RAMB36", "DSP", "LUTRAM", "budget", "within_budget", "pezo_table6", "extrapolated")


@dataclass(frozen=True)
class Design:
    """One row of the comparison: a config and the unit synthesised."""

    config: PerturbConfig
    unit: str = "generator"

    @property
    def name(self) -> str:
        c = self.config
        if self.unit == "scale":
            return f"otf scale LUT 2^{c.rng_bits} (d={c.perturb_dim})"
        if c.strategy == "otf":
            base = f"otf {c.n_rngs} x {c.rng_bits}"
        elif c.strategy == "pregen":
            base = f"pregen {c.pool_size}x{c.pool_bits}b/{c.banks} banks"
        else:
            base = f"gaussian x {c.lanes}"
        if self.unit == "stream":
            return base + " stream"
        return base + (" + rewind" if c.rewind and c.strategy != "pregen" else "")


def comparison_designs(seed: int = 1) -> list[Design]:
    """PeZO's on-the-fly sizes (bare, rewind), PeZO's pool, the CLT Gaussian array (1 and 32 generators),
    the three stream units at default sizes, and the scale LUT at a d where its entries differ."""
    otf = [Design(PerturbConfig(n_rngs=n, rng_bits=b, seed=seed, rewind=rewind))
           for n, b in PEZO_SIZES for rewind in (False, True)]
    gaussian = [Design(PerturbConfig(strategy="gaussian", lanes=g, seed=seed))
                for g in (1, GAUSSIAN_SYNTHESISED)]
    streams = [Design(PerturbConfig(strategy=s, seed=seed), "stream") for s in ("otf", "pregen", "gaussian")]
    return (otf + [Design(PerturbConfig(strategy="pregen", seed=seed))] + gaussian + streams
            + [Design(PerturbConfig(perturb_dim=64, seed=seed), "scale")])


def comparison_configs(seed: int = 1) -> list[PerturbConfig]:
    """The generator configs of ``comparison_designs`` (what ``pezo build`` writes as Verilog)."""
    return [d.config for d in comparison_designs(seed) if d.unit == "generator"]


def _budget_text(r: dict) -> str:
    if "budget" not in r:
        return ""
    b = r["budget"]
    if r["unit"] != "generator":
        return ""
    if r["strategy"] == "pregen":
        text = f"BRAM18 = minimum {b['BRAM18_equivalent']}"
    elif r["strategy"] == "gaussian":
        text = f"FF = 127/gen = {b['FF']}"
    elif r["rewind"]:
        text = f"+{r['overhead']['LUT']}/+{r['overhead']['FF']} <= +{b['LUT']}/+{b['FF']}"
    else:
        text = f"<= {b['LUT']}/{b['FF']}"
    return text + (" ok" if r["within_budget"] else " OVER")


def comparison_rows(designs, progress=None) -> list[dict]:
    """One row per design (accepts Designs or PerturbConfigs), plus the 1024-generator extrapolation
    after the largest Gaussian array."""
    rows = []
    for design in designs:
        if isinstance(design, PerturbConfig):
            design = Design(design)
        c = design.config
        r = report(c, unit=design.unit)
        paper = ""
        if design.unit == "generator" and c.strategy == "otf" and not c.rewind:
            paper = PAPER_OTF.get((c.n_rngs, c.rng_bits), "")
        elif design.unit == "generator" and c.strategy == "pregen":
            paper = PAPER_PREGEN
        row = {"design": design.name, "strategy": c.strategy, "unit": design.unit,
               "n_rngs": c.n_rngs if c.strategy == "otf" else "",
               "rng_bits": c.rng_bits if c.strategy == "otf" else "", "rewind": r["rewind"],
               **{k: r[k] for k in ("LUT", "FF", "CARRY", "BRAM", "RAMB18", "RAMB36", "DSP", "LUTRAM")},
               "budget": _budget_text(r), "within_budget": r.get("within_budget", ""),
               "pezo_table6": paper, "extrapolated": False}
        if "overhead" in r:
            row.update(overhead_LUT=r["overhead"]["LUT"], overhead_FF=r["overhead"]["FF"])
        if design.unit == "scale":
            row["budget"] = f"rom_style {r['rom_style']}, k in {sorted(r['lut_statistics']['shift_histogram'])}"
        rows.append(row)
        if c.strategy == "gaussian" and design.unit == "generator" and c.lanes == GAUSSIAN_SYNTHESISED:
            e = r["extrapolated_1024"]
            rows.append({"design": "gaussian x 1024 (MeZO)", "strategy": "gaussian", "unit": "generator",
                         "n_rngs": "", "rng_bits": "", "rewind": False,
                         **{k: e[k] for k in ("LUT", "FF", "CARRY", "BRAM", "DSP")},
                         "RAMB18": 0, "RAMB36": 0, "LUTRAM": 0,
                         "budget": f"linear from {c.lanes} synthesised", "within_budget": "",
                         "pezo_table6": PAPER_MEZO, "extrapolated": True})
        if progress is not None:
            progress.update(1)
    return rows


def _pct(value: int, total: int) -> str:
    return f"{100 * value / total:.2f}%"


def three_way(rows: list[dict]) -> list[dict]:
    """The Table 6 comparison at default sizes: MeZO (1024 Gaussian RNGs), pre-gen, on-the-fly."""
    labels = {"gaussian x 1024 (MeZO)": "MeZO: 1024 Gaussian RNGs (CLT-12)",
              "pregen 4095x12b/8 banks": "PeZO pre-gen: 4095 x 12 bit pool",
              "otf 32 x 14": "PeZO on-the-fly: 32 URNGs x 14 bit",
              "otf 32 x 8": "PeZO on-the-fly: 32 URNGs x 8 bit"}
    out = []
    for row in rows:
        if row["design"] in labels and row["unit"] == "generator":
            bram36 = row.get("RAMB36", 0) + row.get("RAMB18", 0) / 2 if not row["extrapolated"] else 0
            out.append({"design": labels[row["design"]], "LUT": row["LUT"], "FF": row["FF"], "BRAM": row["BRAM"],
                        "LUT_pct": _pct(row["LUT"], ZCU102["LUT"]), "FF_pct": _pct(row["FF"], ZCU102["FF"]),
                        "BRAM_pct": _pct(bram36, ZCU102["BRAM36"]), "pezo_table6": row["pezo_table6"],
                        "extrapolated": row["extrapolated"]})
    return out


def format_table(rows: list[dict]) -> str:
    head = (f"{'design':<34}{'LUT':>7}{'FF':>7}{'CARRY':>7}{'BRAM':>6}{'DSP':>5}   "
            f"{'budget (LUT/FF)':<32}{'PeZO Table 6 (Vivado)'}")
    lines = [f"Perturbation engines - {TOOL}.",
             "Yosys counts compare designs with each other; they are not Vivado utilisation.", "", head,
             "-" * len(head)]
    for row in rows:
        star = "*" if row["extrapolated"] else ""
        lines.append(f"{row['design'] + star:<34}{row['LUT']:>7}{row['FF']:>7}{row['CARRY']:>7}"
                     f"{row['BRAM']:>6}{row['DSP']:>5}   {row['budget']:<32}{row['pezo_table6']}")
    lines.append("* extrapolated linearly from the synthesised Gaussian array (not synthesised at 1024).")
    lines += ["", "Three strategies at default sizes, beside PeZO Table 6 (% of ZCU102: 274080 LUT, "
              "548160 FF, 912 BRAM36):", ""]
    head = f"{'design':<38}{'LUT':>8}{'LUT %':>8}{'FF':>8}{'FF %':>8}{'BRAM':>6}   {'PeZO Table 6'}"
    lines += [head, "-" * len(head)]
    for row in three_way(rows):
        star = "*" if row["extrapolated"] else ""
        lines.append(f"{row['design'] + star:<38}{row['LUT']:>8}{row['LUT_pct']:>8}{row['FF']:>8}"
                     f"{row['FF_pct']:>8}{row['BRAM']:>6}   {row['pezo_table6']}")
    return "\n".join(lines)


def write_tables(rows: list[dict], directory: Path) -> list[Path]:
    """resources.json, resources.csv and resources.png (LUT and FF per design, with Table 6)."""
    directory = Path(directory)
    payload = {"tool": TOOL, "rows": rows, "three_way": three_way(rows), "pezo_table6": PEZO_TABLE6}
    (directory / "resources.json").write_text(json.dumps(payload, indent=2) + "\n")
    with open(directory / "resources.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(COLUMNS) + ["overhead_LUT", "overhead_FF"])
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
    _plot(rows, directory / "resources.png")
    return [directory / name for name in ("resources.json", "resources.csv", "resources.png")]


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [r["design"] + ("*" if r["extrapolated"] else "") for r in rows] + [
        p["design"].split(":")[0] + ":\n" + p["design"].split(": ")[1] for p in PEZO_TABLE6]
    luts = [r["LUT"] for r in rows] + [p["LUT"] for p in PEZO_TABLE6]
    ffs = [r["FF"] for r in rows] + [p["FF"] for p in PEZO_TABLE6]
    fig, ax = plt.subplots(figsize=(14, 5.5))
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], [max(v, 0.8) for v in luts], width=0.4, label="LUT")
    ax.bar([x + 0.2 for x in xs], [max(v, 0.8) for v in ffs], width=0.4, label="FF")
    ax.axvline(len(rows) - 0.5, color="grey", linestyle="--")
    ax.text(len(rows) - 0.45, max(luts + ffs), "PeZO Table 6 (Vivado)", va="top", fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(list(xs), labels, rotation=40, ha="right", fontsize=7)
    ax.set_ylabel("count (log)")
    ax.set_title("Perturbation engines: pezo (Yosys xcup, out of context; * extrapolated) vs PeZO Table 6")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
