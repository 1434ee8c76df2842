"""The resource comparison as people read it: the markdown tables (resources, timing, the three-way summary
beside PeZO Table 6), CSV, the PNG bar chart and the ``--out`` files, from the rows of ``comparison_rows``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from pezo.boards.flow.comparison_rows import ACTIVITY_DIM, PEZO_TABLE6, ZCU102_CAPACITY
from pezo.boards.flow.synth import TOOL
from pezo.boards.flow.timing import ECP5_TARGET, SEEDS, TIMING_KEYS

COLUMNS = (
    "design",
    "strategy",
    "unit",
    "source",
    "n_rngs",
    "rng_bits",
    "rewind",
    "LUT",
    "LUT_pct",
    "FF",
    "FF_pct",
    "CARRY",
    "BRAM",
    "RAMB18",
    "RAMB36",
    "BRAM36",
    "BRAM_pct",
    "DSP",
    "DSP_pct",
    "LUTRAM",
    "analytical_LUT",
    "analytical_FF",
    "analytical_BRAM36",
    "paper_LUT",
    "paper_FF",
    "paper_BRAM",
    "activity",
    "activity_per_value",
    "activity_rtl",
    "budget",
    "within_budget",
    "pezo_table6",
    "extrapolated",
    *TIMING_KEYS,
)

TOOL_LIMITS = (
    "*Where the tool is the limit: Yosys's xcup netlist counts CARRY4 cells, which UltraScale+ does not "
    "have (its CARRY8 takes 8 bits, so Vivado needs about half as many carry cells); and Yosys packs no "
    "pipeline register into a DSP48E2 (AREG = BREG = MREG = PREG = 0), so the flip-flops in front of and "
    "behind the engine's multipliers count as FFs here where Vivado would absorb them into the DSPs: "
    "the engine's FF figure is an upper bound."
)


def _pct(value: float, total: int) -> str:
    return f"{100 * value / total:.2f}%"


def three_way(rows: list[dict]) -> list[dict]:
    """The Table 6 comparison at default sizes: MeZO (1024 Gaussian RNGs), pre-gen, on-the-fly."""
    labels = {
        "gaussian x 1024 (MeZO)": "MeZO: 1024 Gaussian RNGs (CLT-12)",
        "pregen 4095x12b/8 banks": "PeZO pre-gen: 4095 x 12 bit pool",
        "otf 32 x 14": "PeZO on-the-fly: 32 URNGs x 14 bit",
        "otf 32 x 8": "PeZO on-the-fly: 32 URNGs x 8 bit",
    }
    out, cap = [], ZCU102_CAPACITY
    for row in rows:
        if row["design"] in labels and row["unit"] == "generator":
            out.append(
                {
                    "design": labels[row["design"]],
                    "LUT": row["LUT"],
                    "FF": row["FF"],
                    "BRAM": row["BRAM"],
                    "LUT_pct": _pct(row["LUT"], cap["LUT"]),
                    "FF_pct": _pct(row["FF"], cap["FF"]),
                    "BRAM_pct": _pct(row["BRAM36"], cap["BRAM36"]),
                    "pezo_table6": row["pezo_table6"],
                    "extrapolated": row["extrapolated"],
                }
            )
    return out


SECTIONS = (
    ("generator", "Random-number generation (PeZO Table 6 rows; * = extrapolated linearly)"),
    ("stream", "Perturbation stream units (what the PE array consumes: source + rewind + scaling + sign)"),
    (
        "host",
        "ZCU102 logic, stream designs (`pezo build --design stream`): stream + AXI4-Lite register file "
        "(the PS block design not counted)",
    ),
    (
        "board",
        "ZCU102 logic, the on-device trainer (`pezo build --design engine`, what `make run` writes): "
        "network engine + AXI4-Lite registers + AXI4 burst slave (the PS block design not counted)",
    ),
    ("scale", "otf scale LUT"),
    (
        "engine",
        "ZO engine: 8x8 INT8 MAC array + perturbation stream + controller + weight/activation/logit "
        "memories (estimate: BRAM36 by hand; DSP48E2 = one per MAC + one per lane for g*p)",
    ),
)


def _num(value, digits: int = 0) -> str:
    if value is None or value == "":
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def format_markdown(rows: list[dict]) -> str:
    """The Table-6-shaped markdown table: resources with % of the ZCU102, the hand estimate, PeZO's
    Vivado figures and (stream units) the switching-activity proxy."""
    lines = [
        f"Resources - {TOOL}; % of ZCU102 xczu9eg ({ZCU102_CAPACITY['LUT']} LUT, {ZCU102_CAPACITY['FF']} FF, "
        f"{ZCU102_CAPACITY['BRAM36']} BRAM36, {ZCU102_CAPACITY['DSP']} DSP).",
        "Yosys counts compare designs with each other; they are not Vivado utilisation (rows marked [vivado] are).",
        "",
    ]
    head = (
        "| design | LUT | LUT % | FF | FF % | BRAM (36Kb tiles) | BRAM % | DSP | CARRY4* "
        "| estimate LUT / FF / BRAM36 | PeZO Table 6 LUT / FF / BRAM | activity / cycle | activity / value |"
    )
    for unit, title in SECTIONS:
        section = [r for r in rows if r["unit"] == unit]
        if not section:
            continue
        lines += [f"**{title}**", "", head, "|" + "---|" * 13]
        for r in section:
            name = r["design"] + ("*" if r["extrapolated"] else "") + (" [vivado]" if r["source"] == "vivado" else "")
            estimate = " / ".join(
                _num(r[k], 1 if k.endswith("BRAM36") else 0)
                for k in ("analytical_LUT", "analytical_FF", "analytical_BRAM36")
            )
            paper = " / ".join(_num(r[k]) for k in ("paper_LUT", "paper_FF", "paper_BRAM"))
            lines.append(
                f"| {name} | {r['LUT']} | {r['LUT_pct']:.3f} | {r['FF']} | {r['FF_pct']:.3f} | "
                f"{r['BRAM']} ({_num(float(r['BRAM36']), 1)}) | {r['BRAM_pct']:.2f} | {r['DSP']} | "
                f"{r['CARRY']} | "
                f"{estimate if r['analytical_LUT'] is not None or r['analytical_BRAM36'] else '-'} | "
                f"{paper if r['paper_LUT'] is not None else '-'} | {_num(r['activity'], 1)} | "
                f"{_num(r['activity_per_value'], 1)} |"
            )
        lines.append("")
    lines.append(TOOL_LIMITS)
    if any(r["activity"] is not None for r in rows):
        lines.append(
            "activity: switching-activity proxy of the stream unit over two MeZO steps (+eps, -eps, "
            f"update replay; d = {ACTIVITY_DIM}): toggles per net from an Icarus VCD, weighted per "
            "primitive type (LUT/FF net 1, clock 0.1 per FF, BRAM read 50) and scaled to the "
            "synthesised LUT/FF counts (boards.flow.power). Relative units, not watts; per value = per "
            "perturbation value delivered (otf delivers 32 a cycle, the others 8)."
        )
    return "\n".join(lines)


def format_timing(rows: list[dict]) -> str:
    """The timing table (rows with a measured Fmax), or '' when none has one."""
    timed = [r for r in rows if r.get("fmax_mhz") is not None]
    if not timed:
        return ""
    lines = [
        f"Timing - Fmax after place and route on {ECP5_TARGET} (nextpnr-ecp5, every path register to "
        f"register, median of seeds {', '.join(map(str, SEEDS))}); logic levels after Yosys synth_xilinx "
        "-family xcup; throughput = values per cycle x Fmax.",
        "",
        "| design | unit | Fmax MHz | xcup logic levels | values / cycle | Mvalues/s | values/s per LUT "
        "| critical path |",
        "|" + "---|" * 8,
    ]
    for r in timed:
        throughput = r["throughput_values_per_s"]
        lines.append(
            f"| {r['design']} | {r['unit']} | {r['fmax_mhz']:.1f} | {_num(r['logic_levels'])} | "
            f"{_num(r['values_per_cycle'])} | {_num(throughput and throughput / 1e6, 0)} | "
            f"{_num(r['throughput_per_lut'], 0)} | `{r['critical_path_ends']}` |"
        )
    return "\n".join(lines)


def format_table(rows: list[dict]) -> str:
    """``format_markdown`` plus the three-way summary at default sizes."""
    lines = [format_markdown(rows), ""]
    if format_timing(rows):
        lines += [format_timing(rows), ""]
    lines += ["Three strategies at default sizes, beside PeZO Table 6:", ""]
    head = f"{'design':<38}{'LUT':>8}{'LUT %':>8}{'FF':>8}{'FF %':>8}{'BRAM':>6}   {'PeZO Table 6'}"
    lines += [head, "-" * len(head)]
    for row in three_way(rows):
        star = "*" if row["extrapolated"] else ""
        lines.append(
            f"{row['design'] + star:<38}{row['LUT']:>8}{row['LUT_pct']:>8}{row['FF']:>8}"
            f"{row['FF_pct']:>8}{row['BRAM']:>6}   {row['pezo_table6']}"
        )
    return "\n".join(lines)


def write_csv(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(COLUMNS) + ["overhead_LUT", "overhead_FF"], extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(row)


def write_tables(rows: list[dict], directory: Path) -> list[Path]:
    """resources.md (the table), resources.json, resources.csv and resources.png (LUT and FF per design,
    with Table 6) in ``directory``."""
    directory = Path(directory)
    payload = {
        "tool": TOOL,
        "rows": rows,
        "three_way": three_way(rows),
        "pezo_table6": PEZO_TABLE6,
        "zcu102": ZCU102_CAPACITY,
    }
    (directory / "resources.md").write_text(format_table(rows) + "\n")
    (directory / "resources.json").write_text(json.dumps(payload, indent=2) + "\n")
    write_csv(rows, directory / "resources.csv")
    plot_resources(rows, directory / "resources.png")
    return [directory / f"resources.{ext}" for ext in ("md", "json", "csv", "png")]


def plot_resources(rows: list[dict], path: Path) -> None:
    """LUT, FF, BRAM and DSP per design in four panels (one row per design, PeZO Table 6 below a line):
    LUT and FF on a log axis from 1, BRAM and DSP linear; a zero is written as 0 (grey), never drawn as a bar,
    a 1 on a log axis is a tick (its bar would have no length), a figure not reported is written n/a."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [r["design"] + ("*" if r.get("extrapolated") else "") for r in rows] + [
        "PeZO: " + p["design"].split(": ")[-1] for p in PEZO_TABLE6
    ]
    values = {
        key: [r.get(key) for r in rows] + [p.get(key) for p in PEZO_TABLE6]  # None: not reported
        for key in ("LUT", "FF", "BRAM", "DSP")
    }
    ys = list(range(len(labels)))[::-1]
    fig, axes = plt.subplots(
        1, 4, figsize=(13, 0.32 * len(labels) + 1.6), sharey=True, gridspec_kw={"width_ratios": [3, 3, 1.3, 1.3]}
    )
    for ax, (key, vals) in zip(axes, values.items()):
        log = key in ("LUT", "FF")
        top = max([v for v in vals if v is not None] + [1])
        for y, v in zip(ys, vals):
            color = "C0" if y >= len(PEZO_TABLE6) else "C1"
            if v and (v > 1 or not log):
                ax.barh(y, v - 1 if log else v, left=1 if log else 0, height=0.7, color=color)
            elif v == 1:
                ax.plot([1], [y], marker="|", markersize=9, markeredgewidth=2, color=color)
            shown = "n/a" if v is None else f"{v:g}"
            ax.text(
                v if v else (1 if log else 0), y, f" {shown}", va="center", fontsize=6.5, color="black" if v else "0.45"
            )
        if log:
            ax.set_xscale("log")
            ax.set_xlim(1, top * 12)
            ax.set_xlabel("log axis from 1: a 0 is written (grey), not drawn", fontsize=7)
        else:
            ax.set_xlim(0, top * 1.45)
        ax.set_title(f"{key}{' (log)' if log else ''}", fontsize=9)
        ax.axhline(len(PEZO_TABLE6) - 0.5, color="grey", linestyle="--", linewidth=0.8)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", linewidth=0.3)
    axes[0].set_yticks(ys, labels, fontsize=7)
    fig.suptitle(
        "FPGA resources of pezo's designs (Yosys synth_xilinx xcup, out of context; * extrapolated) "
        "and PeZO Table 6 (Vivado, below the line)",
        fontsize=9.5,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
