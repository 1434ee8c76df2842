"""The main job's resource comparison: every perturbation strategy, generator alone and as a stream
unit, beside PeZO Table 6; and the three-way table at default sizes."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

from pezo.boards.board_report import board_report
from pezo.boards.flow.power import power_proxy
from pezo.boards.flow.report import PEZO_TABLE6, TOOL, engine_report, grng_lut_estimate, pool_bram18_minimum, report
from pezo.boards.flow.timing import ECP5_TARGET, SEEDS, TIMING_KEYS, read_vivado_timing, unit_timing, values_per_cycle
from pezo.boards.flow.vivado import VivadoReportError, read_vivado_run
from pezo.boards.zcu102 import ZCU102_CAPACITY
from pezo.golden.config import PerturbConfig
from pezo.golden.engine.zo_engine import EngineConfig
from pezo.golden.zo.int8_net import NetTrainConfig
from pezo.hw.strategies import STRATEGIES, strategy

PEZO_SIZES = ((32, 14), (32, 8), (31, 8))
STRATEGY_ORDER = tuple(STRATEGIES)  # otf, pregen, gaussian
DEFAULT_TRAINER_NET = "digits-mlp"  # the network of `pezo build --design engine` without --net
GAUSSIAN_SYNTHESISED = 32  # generators synthesised to extrapolate MeZO's 1024
ACTIVITY_DIM = 4096  # values per perturbation in the switching-activity run
ZCU102 = ZCU102_CAPACITY
COLUMNS = ("design", "strategy", "unit", "source", "n_rngs", "rng_bits", "rewind", "LUT", "LUT_pct", "FF",
           "FF_pct", "CARRY", "BRAM", "RAMB18", "RAMB36", "BRAM36", "BRAM_pct", "DSP", "DSP_pct", "LUTRAM",
           "analytical_LUT", "analytical_FF", "analytical_BRAM36", "paper_LUT", "paper_FF", "paper_BRAM",
           "activity", "activity_per_value", "activity_rtl", "budget", "within_budget", "pezo_table6", "extrapolated",
           *TIMING_KEYS)


@dataclass(frozen=True)
class Design:
    """One row of the comparison: a config and the unit synthesised (unit ``engine``: an ``EngineConfig``)."""

    config: PerturbConfig
    unit: str = "generator"

    @property
    def name(self) -> str:
        c = self.config
        if self.unit == "board":
            return f"ZCU102 trainer: engine top {c.name} {c.rows}x{c.cols} B={c.batch} + {c.strategy}"
        if self.unit == "engine":
            return f"ZO engine {c.rows}x{c.cols} INT8 + {c.strategy} stream"
        if self.unit == "scale":
            return f"otf scale LUT 2^{c.rng_bits} (d={c.perturb_dim})"
        s = strategy(c.strategy)
        base = s.design_name(c)
        if self.unit == "stream":
            return base + " stream"
        if self.unit == "host":
            return base + " host (AXI4-Lite)"
        return base + (" + rewind" if c.rewind and not s.always_rewindable else "")


def comparison_designs(seed: int = 1) -> list[Design]:
    """PeZO's on-the-fly sizes (bare, rewind), PeZO's pool, the CLT Gaussian array (1 and 32 generators),
    the three stream units at default sizes, the scale LUT at a d where its entries differ, and the ZO
    engine (PE array + stream) with either PeZO stream."""
    otf = [Design(PerturbConfig(n_rngs=n, rng_bits=b, seed=seed, rewind=rewind))
           for n, b in PEZO_SIZES for rewind in (False, True)]
    gaussian = [Design(PerturbConfig(strategy="gaussian", lanes=g, seed=seed))
                for g in (1, GAUSSIAN_SYNTHESISED)]
    streams = [Design(PerturbConfig(strategy=s, seed=seed), "stream") for s in STRATEGY_ORDER]
    hosts = [Design(PerturbConfig(strategy=s, seed=seed), "host") for s in STRATEGY_ORDER]
    engines = [Design(EngineConfig(strategy=s, seed=seed), "engine") for s in STRATEGY_ORDER if STRATEGIES[s].engine]
    return (otf + [Design(PerturbConfig(strategy="pregen", seed=seed))] + gaussian + streams + hosts
            + [Design(PerturbConfig(perturb_dim=64, seed=seed), "scale")] + engines + trainer_designs(seed))


def trainer_designs(seed: int = 1) -> list[Design]:
    """The ZCU102 trainer's logic (``pezo build --design engine``, what ``make run`` writes): the engine top of
    the default network with the trainer's defaults (digits-mlp, 8x8, batch 128), one per PeZO stream."""
    return [Design(NetTrainConfig(net=DEFAULT_TRAINER_NET, strategy=s, stream_seed=seed).net_config, "board")
            for s in STRATEGY_ORDER if STRATEGIES[s].engine]


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


def analytical(design: Design) -> dict | None:
    """Hand estimate of a generator (None for other units): otf one feedback LUT per LFSR and n*b state
    FF + the ceil(log2 n)-bit pointer (rewind: + n*b shadow FF and n*b load-mux LUT); pregen the fewest
    BRAM tiles (``pool_bram18_minimum`` / 2); gaussian 204 LUT (96 XOR + adder tree) and 127 FF each."""
    c = design.config
    if design.unit != "generator":
        return None
    if c.strategy == "otf":
        n, b = c.n_rngs, c.rng_bits
        log_n = math.ceil(math.log2(n)) if n > 1 else 0
        extra = n * b if c.rewind else 0
        return {"LUT": n + extra, "FF": n * b + log_n + extra, "BRAM36": 0}
    if c.strategy == "pregen":
        return {"LUT": None, "FF": None, "BRAM36": pool_bram18_minimum(c) / 2}
    return {"LUT": grng_lut_estimate() * c.lanes, "FF": 127 * c.lanes, "BRAM36": 0}


def paper_figures(design: Design) -> dict | None:
    """PeZO Table 6 (Vivado, ZCU102) for the designs it lists."""
    c = design.config
    if design.unit != "generator" or c.rewind:
        return None
    if c.strategy == "otf" and (c.n_rngs, c.rng_bits) in ((32, 8), (32, 14)):
        return next(p for p in PEZO_TABLE6 if p["design"].endswith(f"32 URNGs x {c.rng_bits} bit"))
    if c.strategy == "pregen" and (c.pool_size, c.pool_bits) == (4095, 12):
        return PEZO_TABLE6[1]
    return None


def _percentages(row: dict) -> dict:
    return {"LUT_pct": 100 * row["LUT"] / ZCU102["LUT"], "FF_pct": 100 * row["FF"] / ZCU102["FF"],
            "BRAM_pct": 100 * row["BRAM36"] / ZCU102["BRAM36"], "DSP_pct": 100 * row["DSP"] / ZCU102["DSP"]}


def _row(design: Design, r: dict, source: str) -> dict:
    c = design.config
    paper = paper_figures(design)
    est = analytical(design)
    fields = strategy(c.strategy).fields
    row = {"design": design.name, "strategy": c.strategy, "unit": design.unit,
           "n_rngs": c.n_rngs if "n_rngs" in fields else "",
           "rng_bits": c.rng_bits if "rng_bits" in fields else "", "rewind": r.get("rewind", True),
           **{k: r[k] for k in ("LUT", "FF", "CARRY", "BRAM", "RAMB18", "RAMB36", "DSP", "LUTRAM")},
           "BRAM36": r["RAMB36"] + r["RAMB18"] / 2, "source": source,
           "budget": _budget_text(r), "within_budget": r.get("within_budget", ""),
           "pezo_table6": _paper_text(paper), "extrapolated": False,
           "analytical_LUT": est and est["LUT"], "analytical_FF": est and est["FF"],
           "analytical_BRAM36": est and est["BRAM36"],
           "paper_LUT": paper and paper["LUT"], "paper_FF": paper and paper["FF"],
           "paper_BRAM": paper and paper["BRAM"], "activity": None, "activity_per_value": None,
           "activity_rtl": None}
    row.update(_percentages(row))
    if "overhead" in r:
        row.update(overhead_LUT=r["overhead"]["LUT"], overhead_FF=r["overhead"]["FF"])
    if design.unit == "scale":
        row["budget"] = f"rom_style {r['rom_style']}, k in {sorted(r['lut_statistics']['shift_histogram'])}"
    return row


def engine_row(design: Design, use_cache: bool = True) -> dict:
    """The comparison row of a ZO engine (``boards.flow.report.engine_report``); budget = the DSP estimate."""
    r = engine_report(design.config, use_cache=use_cache)
    row = {"design": design.name, "strategy": r["strategy"], "unit": "engine", "source": "yosys",
           "n_rngs": r.get("n_rngs", ""), "rng_bits": r.get("rng_bits", ""), "rewind": True,
           **{k: r[k] for k in ("LUT", "FF", "CARRY", "BRAM", "RAMB18", "RAMB36", "DSP", "LUTRAM")},
           "BRAM36": r["BRAM36"], "budget": f"DSP {r['DSP']} <= {r['analytical_DSP']} "
                                             f"({'ok' if r['within_budget'] else 'OVER'})",
           "within_budget": r["within_budget"], "pezo_table6": "", "extrapolated": False,
           "analytical_LUT": None, "analytical_FF": None, "analytical_BRAM36": r["analytical_BRAM36"],
           "analytical_DSP": r["analytical_DSP"], "paper_LUT": None, "paper_FF": None, "paper_BRAM": None,
           "activity": None, "activity_per_value": None, "activity_rtl": None, "cycle_bound": r["cycle_bound"]}
    row.update(_percentages(row))
    return row


def board_row(design: Design, use_cache: bool = True) -> dict:
    """The comparison row of the ZCU102 trainer's engine top (``boards.board_report``: network engine + AXI4-Lite
    registers + AXI4 burst slave); budget = its AXI overhead over the engine alone when that is cached."""
    r = board_report(design.config, use_cache=use_cache)
    overhead = r.get("axi_overhead")
    row = {"design": design.name, "strategy": r["strategy"], "unit": "board", "source": "yosys",
           "n_rngs": "", "rng_bits": design.config.rng_bits if design.config.strategy == "otf" else "",
           "rewind": True, **{k: r[k] for k in ("LUT", "FF", "CARRY", "BRAM", "RAMB18", "RAMB36", "DSP", "LUTRAM")},
           "BRAM36": r["BRAM36"],
           "budget": f"AXI +{overhead['LUT']} LUT / +{overhead['FF']} FF over the engine" if overhead else "",
           "within_budget": "", "pezo_table6": "", "extrapolated": False, "analytical_LUT": None,
           "analytical_FF": None, "analytical_BRAM36": None, "paper_LUT": None, "paper_FF": None, "paper_BRAM": None,
           "activity": None, "activity_per_value": None, "activity_rtl": None, "cycle_bound": r["cycle_bound"],
           "net": r["net"], "batch": r["batch"]}
    row.update(_percentages(row))
    return row


def _paper_text(paper: dict | None) -> str:
    if paper is None:
        return ""
    parts = [f"{paper['LUT']} LUT" if paper["LUT"] else "", f"{paper['FF']} FF" if paper["FF"] else "",
             f"{paper['BRAM']} BRAM" if paper["BRAM"] else ""]
    return " / ".join(p for p in parts if p)


def add_timing(row: dict, design: Design, timing: bool, use_cache: bool = True) -> dict:
    """``row`` with the timing columns (``boards.flow.timing.TIMING_KEYS``): measured when ``timing``
    (nextpnr-ecp5 place and route, cached), else None."""
    if not timing:
        return {**row, **{k: None for k in TIMING_KEYS}}
    t = unit_timing(design.config, design.unit, luts=row["LUT"], use_cache=use_cache)
    return {**row, **{k: t[k] for k in TIMING_KEYS}}


def comparison_rows(designs, progress=None, activity: bool = False, timing: bool = False,
                    executor=None, use_cache: bool = True) -> list[dict]:
    """One row per design (accepts Designs or PerturbConfigs), plus the 1024-generator extrapolation
    after the largest Gaussian array. With ``activity``, stream units carry the switching-activity
    proxy of ``boards.flow.power`` (a relative figure per cycle, not watts); with ``timing``, every row its
    Fmax (``boards.flow.timing``: ECP5 place and route, median of the seeds), xcup logic levels and throughput
    (the timing keys are None otherwise). Each design is one task on ``executor`` (``pezo.executor``;
    None: in this process); the rows come in design order, the same on every executor; ``progress``
    (a tqdm bar) moves as designs finish. ``use_cache=False`` re-runs every synthesis, activity run and place
    and route (``pezo report --no-cache``)."""
    from pezo.executor import SERIAL

    designs = [d if isinstance(d, Design) else Design(d) for d in designs]
    order = sorted(range(len(designs)), key=lambda i: -expected_seconds(designs[i], activity))
    rows: list = [None] * len(designs)
    jobs = [(designs[i], activity, timing, use_cache) for i in order]
    for j, design_rows in (executor or SERIAL).imap(_design_rows, jobs):
        rows[order[j]] = design_rows
        if progress is not None:
            progress.update(1)
    return [row for design_rows in rows for row in design_rows]


# Cold seconds of one design's row on one core (Yosys xcup; a stream with activity adds a second synthesis at
# ACTIVITY_DIM, the netlist classification and the Icarus run), measured 2026-11 on this project's 2-core machine.
_COLD_SECONDS = {"board": 90, "stream": 30, "engine": 35, "host": 30, "scale": 25, "generator": 8}
_ACTIVITY_SECONDS = 60


def expected_seconds(design: Design, activity: bool = False) -> float:
    """A rough cold cost of ``design``'s row: ``comparison_rows`` starts the longest first, so the short ones fill
    the workers at the end instead of one long design running alone (the rows' order is unchanged)."""
    seconds = _COLD_SECONDS.get(design.unit, 8)
    if design.unit == "generator" and design.config.strategy == "gaussian":
        seconds *= max(1, design.config.lanes / 8)
    return seconds + (_ACTIVITY_SECONDS if activity and design.unit == "stream" else 0)


def _design_rows(job) -> list[dict]:
    """The row(s) of one design: ``job = (design, activity, timing, use_cache)``."""
    design, activity, timing, use_cache = job
    c = design.config
    if design.unit in ("engine", "board"):
        row = (engine_row if design.unit == "engine" else board_row)(design, use_cache=use_cache)
        return [add_timing(row, design, timing, use_cache=use_cache)]
    r = report(c, use_cache=use_cache, unit=design.unit)
    row = add_timing(_row(design, r, "yosys"), design, timing, use_cache=use_cache)
    if activity and design.unit == "stream":
        proxy = stream_activity(c, use_cache=use_cache)
        row.update(activity=round(proxy["activity_proxy_synth_scaled"], 1),
                   activity_per_value=round(proxy["activity_per_value_synth_scaled"], 2),
                   activity_rtl=round(proxy["activity_proxy"], 1))
    rows = [row]
    if c.strategy == "gaussian" and design.unit == "generator" and c.lanes == GAUSSIAN_SYNTHESISED:
        e = r["extrapolated_1024"]
        ext = {"design": "gaussian x 1024 (MeZO)", "strategy": "gaussian", "unit": "generator",
               "n_rngs": "", "rng_bits": "", "rewind": False,
               **{k: e[k] for k in ("LUT", "FF", "CARRY", "BRAM", "DSP")},
               "RAMB18": 0, "RAMB36": 0, "LUTRAM": 0, "BRAM36": 0, "source": "extrapolated",
               "budget": f"linear from {c.lanes} synthesised", "within_budget": "",
               "pezo_table6": _paper_text(PEZO_TABLE6[0]), "extrapolated": True,
               "analytical_LUT": grng_lut_estimate() * 1024, "analytical_FF": 127 * 1024,
               "analytical_BRAM36": 0, "paper_LUT": PEZO_TABLE6[0]["LUT"], "paper_FF": PEZO_TABLE6[0]["FF"],
               "paper_BRAM": 0, "activity": None, "activity_per_value": None, "activity_rtl": None,
               **{k: None for k in TIMING_KEYS}}
        ext.update(_percentages(ext))
        rows.append(ext)
    return rows


def stream_activity(config: PerturbConfig, use_cache: bool = True) -> dict:
    """The switching-activity proxy of a stream unit over a representative MeZO run (``boards.flow.power``),
    at ``ACTIVITY_DIM`` values per perturbation."""
    return power_proxy(config.replace(perturb_dim=ACTIVITY_DIM), unit="stream", use_cache=use_cache)


def vivado_row(run_dir: Path) -> dict:
    """A row from a Vivado run of ``pezo build`` (its ``config.json`` names the strategy): the host's
    post-place (else post-synthesis) utilisation, replacing the Yosys estimate."""
    run_dir = Path(run_dir)
    vivado = read_vivado_run(run_dir)
    try:
        meta = json.loads((run_dir / "config.json").read_text())
        config = PerturbConfig(**meta["config"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise VivadoReportError(f"--vivado {run_dir}: no readable config.json written by pezo build ({exc})") \
            from None
    r = {k: vivado[k] for k in ("LUT", "FF", "CARRY", "BRAM", "RAMB18", "RAMB36", "DSP", "LUTRAM")}
    row = _row(Design(config, "host"), {**r, "rewind": True}, "vivado")
    row["design"] = f"{Design(config, 'host').name} [ZCU102 top, {vivado['tool']}]"
    row.update({k: None for k in TIMING_KEYS})
    timing = read_vivado_timing(run_dir)  # WNS -> Fmax, when Vivado wrote a timing summary
    if timing is not None:
        per_cycle = values_per_cycle(config, "host")
        throughput = per_cycle * timing["fmax_mhz"] * 1e6
        row.update(fmax_mhz=timing["fmax_mhz"], fmax_source="vivado", fmax_target="ZCU102 xczu9eg (Vivado)",
                   logic_levels=timing.get("logic_levels"), values_per_cycle=per_cycle,
                   throughput_values_per_s=throughput, throughput_per_lut=round(throughput / row["LUT"], 1),
                   critical_path_ends=timing.get("report", ""))
    return row


TOOL_LIMITS = ("*Where the tool is the limit: Yosys's xcup netlist counts CARRY4 cells, which UltraScale+ does not "
               "have (its CARRY8 takes 8 bits, so Vivado needs about half as many carry cells); and Yosys packs no "
               "pipeline register into a DSP48E2 (AREG = BREG = MREG = PREG = 0), so the flip-flops in front of and "
               "behind the engine's multipliers count as FFs here where Vivado would absorb them into the DSPs: "
               "the engine's FF figure is an upper bound.")


def _pct(value: float, total: int) -> str:
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
            out.append({"design": labels[row["design"]], "LUT": row["LUT"], "FF": row["FF"], "BRAM": row["BRAM"],
                        "LUT_pct": _pct(row["LUT"], ZCU102["LUT"]), "FF_pct": _pct(row["FF"], ZCU102["FF"]),
                        "BRAM_pct": _pct(row["BRAM36"], ZCU102["BRAM36"]), "pezo_table6": row["pezo_table6"],
                        "extrapolated": row["extrapolated"]})
    return out


SECTIONS = (("generator", "Random-number generation (PeZO Table 6 rows; * = extrapolated linearly)"),
            ("stream", "Perturbation stream units (what the PE array consumes: source + rewind + scaling + sign)"),
            ("host", "ZCU102 logic, stream designs (`pezo build --design stream`): stream + AXI4-Lite register file "
                     "(the PS block design not counted)"),
            ("board", "ZCU102 logic, the on-device trainer (`pezo build --design engine`, what `make run` writes): "
                      "network engine + AXI4-Lite registers + AXI4 burst slave (the PS block design not counted)"),
            ("scale", "otf scale LUT"),
            ("engine", "ZO engine: 8x8 INT8 MAC array + perturbation stream + controller + weight/activation/logit "
                       "memories (estimate: BRAM36 by hand; DSP48E2 = one per MAC + one per lane for g*p)"))


def _num(value, digits: int = 0) -> str:
    if value is None or value == "":
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def format_markdown(rows: list[dict]) -> str:
    """The Table-6-shaped markdown table: resources with % of the ZCU102, the hand estimate, PeZO's
    Vivado figures and (stream units) the switching-activity proxy."""
    lines = [f"Resources - {TOOL}; % of ZCU102 xczu9eg ({ZCU102['LUT']} LUT, {ZCU102['FF']} FF, "
             f"{ZCU102['BRAM36']} BRAM36, {ZCU102['DSP']} DSP).",
             "Yosys counts compare designs with each other; they are not Vivado utilisation "
             "(rows marked [vivado] are).", ""]
    head = ("| design | LUT | LUT % | FF | FF % | BRAM (36Kb tiles) | BRAM % | DSP | CARRY4* | estimate LUT / FF / BRAM36 "
            "| PeZO Table 6 LUT / FF / BRAM | activity / cycle | activity / value |")
    for unit, title in SECTIONS:
        section = [r for r in rows if r["unit"] == unit]
        if not section:
            continue
        lines += [f"**{title}**", "", head, "|" + "---|" * 13]
        for r in section:
            name = r["design"] + ("*" if r["extrapolated"] else "") + (" [vivado]" if r["source"] == "vivado" else "")
            estimate = " / ".join(_num(r[k], 1 if k.endswith("BRAM36") else 0)
                                  for k in ("analytical_LUT", "analytical_FF", "analytical_BRAM36"))
            paper = " / ".join(_num(r[k]) for k in ("paper_LUT", "paper_FF", "paper_BRAM"))
            lines.append(f"| {name} | {r['LUT']} | {r['LUT_pct']:.3f} | {r['FF']} | {r['FF_pct']:.3f} | "
                         f"{r['BRAM']} ({_num(float(r['BRAM36']), 1)}) | {r['BRAM_pct']:.2f} | {r['DSP']} | {r['CARRY']} | "
                         f"{estimate if r['analytical_LUT'] is not None or r['analytical_BRAM36'] else '-'} | "
                         f"{paper if r['paper_LUT'] is not None else '-'} | {_num(r['activity'], 1)} | "
                         f"{_num(r['activity_per_value'], 1)} |")
        lines.append("")
    lines.append(TOOL_LIMITS)
    if any(r["activity"] is not None for r in rows):
        lines.append("activity: switching-activity proxy of the stream unit over two MeZO steps (+eps, -eps, "
                     f"update replay; d = {ACTIVITY_DIM}): toggles per net from an Icarus VCD, weighted per "
                     "primitive type (LUT/FF net 1, clock 0.1 per FF, BRAM read 50) and scaled to the "
                     "synthesised LUT/FF counts (boards.flow.power). Relative units, not watts; per value = per "
                     "perturbation value delivered (otf delivers 32 a cycle, the others 8).")
    return "\n".join(lines)


def format_timing(rows: list[dict]) -> str:
    """The timing table (rows with a measured Fmax), or '' when none has one."""
    timed = [r for r in rows if r.get("fmax_mhz") is not None]
    if not timed:
        return ""
    lines = [f"Timing - Fmax after place and route on {ECP5_TARGET} (nextpnr-ecp5, every path register to "
             f"register, median of seeds {', '.join(map(str, SEEDS))}); logic levels after Yosys synth_xilinx "
             "-family xcup; throughput = values per cycle x Fmax.", "",
             "| design | unit | Fmax MHz | xcup logic levels | values / cycle | Mvalues/s | values/s per LUT "
             "| critical path |", "|" + "---|" * 8]
    for r in timed:
        throughput = r["throughput_values_per_s"]
        lines.append(f"| {r['design']} | {r['unit']} | {r['fmax_mhz']:.1f} | {_num(r['logic_levels'])} | "
                     f"{_num(r['values_per_cycle'])} | {_num(throughput and throughput / 1e6, 0)} | "
                     f"{_num(r['throughput_per_lut'], 0)} | `{r['critical_path_ends']}` |")
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
        lines.append(f"{row['design'] + star:<38}{row['LUT']:>8}{row['LUT_pct']:>8}{row['FF']:>8}"
                     f"{row['FF_pct']:>8}{row['BRAM']:>6}   {row['pezo_table6']}")
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
    payload = {"tool": TOOL, "rows": rows, "three_way": three_way(rows), "pezo_table6": PEZO_TABLE6,
               "zcu102": ZCU102}
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
        "PeZO: " + p["design"].split(": ")[-1] for p in PEZO_TABLE6]
    values = {key: [r.get(key) for r in rows] + [p.get(key) for p in PEZO_TABLE6]  # None: not reported
              for key in ("LUT", "FF", "BRAM", "DSP")}
    ys = list(range(len(labels)))[::-1]
    fig, axes = plt.subplots(1, 4, figsize=(13, 0.32 * len(labels) + 1.6), sharey=True,
                             gridspec_kw={"width_ratios": [3, 3, 1.3, 1.3]})
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
            ax.text(v if v else (1 if log else 0), y, f" {shown}", va="center", fontsize=6.5,
                    color="black" if v else "0.45")
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
    fig.suptitle("FPGA resources of pezo's designs (Yosys synth_xilinx xcup, out of context; * extrapolated) "
                 "and PeZO Table 6 (Vivado, below the line)", fontsize=9.5)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
