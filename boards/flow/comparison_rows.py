"""The rows of the resource comparison (``pezo report`` without generator options): every perturbation strategy,
generator alone and as a stream unit, the engines and the ZCU102 trainer, each with % of the ZCU102, the hand
estimate, PeZO Table 6 and (optionally) activity and timing. Formatting and files: ``comparison_table``."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from pezo.boards.flow.estimates import grng_lut_estimate, pool_bram18_minimum
from pezo.boards.flow.power import power_proxy
from pezo.boards.flow.report import board_report, engine_report, report
from pezo.boards.flow.timing import TIMING_KEYS, read_vivado_timing, unit_timing, values_per_cycle
from pezo.boards.flow.vivado import VivadoReportError, read_vivado_run
from pezo.golden.config import PerturbConfig
from pezo.golden.engine.zo_engine import EngineConfig
from pezo.golden.zo.net_config import NetTrainConfig
from pezo.hw.strategies import STRATEGIES, strategy

PEZO_SIZES = ((32, 14), (32, 8), (31, 8))
STRATEGY_ORDER = tuple(STRATEGIES)  # otf, pregen, gaussian
DEFAULT_TRAINER_NET = "digits-mlp"  # the network of `pezo build --design engine` without --net
GAUSSIAN_SYNTHESISED = 32  # generators synthesised to extrapolate MeZO's 1024
ACTIVITY_DIM = 4096  # values per perturbation in the switching-activity run
ZCU102_CAPACITY = {"LUT": 274_080, "FF": 548_160, "BRAM36": 912, "DSP": 2_520}
"""The ZCU102's xczu9eg, what the rows' percentages are of (DS891, Zynq UltraScale+ MPSoC product table):
274 080 CLB LUTs, 548 160 CLB flip-flops, 912 block RAM tiles (36 Kb; 32.1 Mb), 2 520 DSP48E2 slices."""
PEZO_TABLE6 = [  # PeZO Table 6, random-number generation part on ZCU102 (Vivado)
    {"design": "MeZO: 1024 Gaussian RNGs (TreeGRNG)", "LUT": 133120, "FF": 69632, "BRAM": 0},
    {"design": "PeZO pre-gen: 4096 x 12 bit pool", "LUT": 0, "FF": 16, "BRAM": 8},
    {"design": "PeZO on-the-fly: 32 URNGs x 8 bit", "LUT": 32, "FF": 449, "BRAM": 0},
    {"design": "PeZO on-the-fly: 32 URNGs x 14 bit", "LUT": 32, "FF": 512, "BRAM": 0},
]


@dataclass(frozen=True)
class Design:
    """One row of the comparison: a config and the unit synthesised (unit ``engine``: an ``EngineConfig``)."""

    config: PerturbConfig
    unit: str = "generator"

    @property
    def name(self) -> str:
        c = self.config
        if self.unit == "board":
            return (
                f"ZCU102 trainer: engine top {c.name} {c.array.rows}x{c.array.cols} B={c.array.batch} + "
                f"{c.stream.strategy}"
            )
        if self.unit == "engine":
            return f"ZO engine {c.array.rows}x{c.array.cols} INT8 + {c.stream.strategy} stream"
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
    otf = [
        Design(PerturbConfig(n_rngs=n, rng_bits=b, seed=seed, rewind=rewind))
        for n, b in PEZO_SIZES
        for rewind in (False, True)
    ]
    gaussian = [Design(PerturbConfig(strategy="gaussian", lanes=g, seed=seed)) for g in (1, GAUSSIAN_SYNTHESISED)]
    streams = [Design(PerturbConfig(strategy=s, seed=seed), "stream") for s in STRATEGY_ORDER]
    hosts = [Design(PerturbConfig(strategy=s, seed=seed), "host") for s in STRATEGY_ORDER]
    engines = [
        Design(EngineConfig().replace(strategy=s, seed=seed), "engine") for s in STRATEGY_ORDER if STRATEGIES[s].engine
    ]
    return (
        otf
        + [Design(PerturbConfig(strategy="pregen", seed=seed))]
        + gaussian
        + streams
        + hosts
        + [Design(PerturbConfig(perturb_dim=64, seed=seed), "scale")]
        + engines
        + trainer_designs(seed)
    )


def trainer_designs(seed: int = 1) -> list[Design]:
    """The ZCU102 trainer's logic (``pezo build --design engine``, what ``make run`` writes): the engine top of
    the default network with the trainer's defaults (digits-mlp, 8x8, batch 128), one per PeZO stream."""
    return [
        Design(NetTrainConfig().replace(net=DEFAULT_TRAINER_NET, strategy=s, stream_seed=seed).net_config, "board")
        for s in STRATEGY_ORDER
        if STRATEGIES[s].engine
    ]


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
    cap = ZCU102_CAPACITY
    return {
        "LUT_pct": 100 * row["LUT"] / cap["LUT"],
        "FF_pct": 100 * row["FF"] / cap["FF"],
        "BRAM_pct": 100 * row["BRAM36"] / cap["BRAM36"],
        "DSP_pct": 100 * row["DSP"] / cap["DSP"],
    }


def _row(design: Design, r: dict, source: str) -> dict:
    c = design.config
    paper = paper_figures(design)
    est = analytical(design)
    fields = strategy(c.strategy).fields
    row = {
        "design": design.name,
        "strategy": c.strategy,
        "unit": design.unit,
        "n_rngs": c.n_rngs if "n_rngs" in fields else "",
        "rng_bits": c.rng_bits if "rng_bits" in fields else "",
        "rewind": r.get("rewind", True),
        **{k: r[k] for k in ("LUT", "FF", "CARRY", "BRAM", "RAMB18", "RAMB36", "DSP", "LUTRAM")},
        "BRAM36": r["RAMB36"] + r["RAMB18"] / 2,
        "source": source,
        "budget": _budget_text(r),
        "within_budget": r.get("within_budget", ""),
        "pezo_table6": _paper_text(paper),
        "extrapolated": False,
        "analytical_LUT": est and est["LUT"],
        "analytical_FF": est and est["FF"],
        "analytical_BRAM36": est and est["BRAM36"],
        "paper_LUT": paper and paper["LUT"],
        "paper_FF": paper and paper["FF"],
        "paper_BRAM": paper and paper["BRAM"],
        "activity": None,
        "activity_per_value": None,
        "activity_rtl": None,
    }
    row.update(_percentages(row))
    if "overhead" in r:
        row.update(overhead_LUT=r["overhead"]["LUT"], overhead_FF=r["overhead"]["FF"])
    if design.unit == "scale":
        row["budget"] = f"rom_style {r['rom_style']}, k in {sorted(r['lut_statistics']['shift_histogram'])}"
    return row


def engine_row(design: Design, use_cache: bool = True) -> dict:
    """The comparison row of a ZO engine (``boards.flow.report.engine_report``); budget = the DSP estimate."""
    r = engine_report(design.config, use_cache=use_cache)
    row = {
        "design": design.name,
        "strategy": r["strategy"],
        "unit": "engine",
        "source": "yosys",
        "n_rngs": r.get("n_rngs", ""),
        "rng_bits": r.get("rng_bits", ""),
        "rewind": True,
        **{k: r[k] for k in ("LUT", "FF", "CARRY", "BRAM", "RAMB18", "RAMB36", "DSP", "LUTRAM")},
        "BRAM36": r["BRAM36"],
        "budget": f"DSP {r['DSP']} <= {r['analytical_DSP']} ({'ok' if r['within_budget'] else 'OVER'})",
        "within_budget": r["within_budget"],
        "pezo_table6": "",
        "extrapolated": False,
        "analytical_LUT": None,
        "analytical_FF": None,
        "analytical_BRAM36": r["analytical_BRAM36"],
        "analytical_DSP": r["analytical_DSP"],
        "paper_LUT": None,
        "paper_FF": None,
        "paper_BRAM": None,
        "activity": None,
        "activity_per_value": None,
        "activity_rtl": None,
        "cycle_bound": r["cycle_bound"],
    }
    row.update(_percentages(row))
    return row


def board_row(design: Design, use_cache: bool = True) -> dict:
    """The comparison row of the ZCU102 trainer's engine top (``report.board_report``: network engine + AXI4-Lite
    registers + AXI4 burst slave); budget = its AXI overhead over the engine alone when that is cached."""
    r = board_report(design.config, use_cache=use_cache)
    overhead = r.get("axi_overhead")
    row = {
        "design": design.name,
        "strategy": r["strategy"],
        "unit": "board",
        "source": "yosys",
        "n_rngs": "",
        "rng_bits": design.config.stream.rng_bits if design.config.stream.strategy == "otf" else "",
        "rewind": True,
        **{k: r[k] for k in ("LUT", "FF", "CARRY", "BRAM", "RAMB18", "RAMB36", "DSP", "LUTRAM")},
        "BRAM36": r["BRAM36"],
        "budget": f"AXI +{overhead['LUT']} LUT / +{overhead['FF']} FF over the engine" if overhead else "",
        "within_budget": "",
        "pezo_table6": "",
        "extrapolated": False,
        "analytical_LUT": None,
        "analytical_FF": None,
        "analytical_BRAM36": None,
        "paper_LUT": None,
        "paper_FF": None,
        "paper_BRAM": None,
        "activity": None,
        "activity_per_value": None,
        "activity_rtl": None,
        "cycle_bound": r["cycle_bound"],
        "net": r["net"],
        "batch": r["batch"],
    }
    row.update(_percentages(row))
    return row


def _paper_text(paper: dict | None) -> str:
    if paper is None:
        return ""
    parts = [
        f"{paper['LUT']} LUT" if paper["LUT"] else "",
        f"{paper['FF']} FF" if paper["FF"] else "",
        f"{paper['BRAM']} BRAM" if paper["BRAM"] else "",
    ]
    return " / ".join(p for p in parts if p)


def add_timing(row: dict, design: Design, timing: bool, use_cache: bool = True) -> dict:
    """``row`` with the timing columns (``boards.flow.timing.TIMING_KEYS``): measured when ``timing``
    (nextpnr-ecp5 place and route, cached), else None."""
    if not timing:
        return {**row, **{k: None for k in TIMING_KEYS}}
    t = unit_timing(design.config, design.unit, luts=row["LUT"], use_cache=use_cache)
    return {**row, **{k: t[k] for k in TIMING_KEYS}}


def comparison_rows(
    designs, progress=None, activity: bool = False, timing: bool = False, executor=None, use_cache: bool = True
) -> list[dict]:
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
        row.update(
            activity=round(proxy["activity_proxy_synth_scaled"], 1),
            activity_per_value=round(proxy["activity_per_value_synth_scaled"], 2),
            activity_rtl=round(proxy["activity_proxy"], 1),
        )
    rows = [row]
    if c.strategy == "gaussian" and design.unit == "generator" and c.lanes == GAUSSIAN_SYNTHESISED:
        e = r["extrapolated_1024"]
        ext = {
            "design": "gaussian x 1024 (MeZO)",
            "strategy": "gaussian",
            "unit": "generator",
            "n_rngs": "",
            "rng_bits": "",
            "rewind": False,
            **{k: e[k] for k in ("LUT", "FF", "CARRY", "BRAM", "DSP")},
            "RAMB18": 0,
            "RAMB36": 0,
            "LUTRAM": 0,
            "BRAM36": 0,
            "source": "extrapolated",
            "budget": f"linear from {c.lanes} synthesised",
            "within_budget": "",
            "pezo_table6": _paper_text(PEZO_TABLE6[0]),
            "extrapolated": True,
            "analytical_LUT": grng_lut_estimate() * 1024,
            "analytical_FF": 127 * 1024,
            "analytical_BRAM36": 0,
            "paper_LUT": PEZO_TABLE6[0]["LUT"],
            "paper_FF": PEZO_TABLE6[0]["FF"],
            "paper_BRAM": 0,
            "activity": None,
            "activity_per_value": None,
            "activity_rtl": None,
            **{k: None for k in TIMING_KEYS},
        }
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
        raise VivadoReportError(f"--vivado {run_dir}: no readable config.json written by pezo build ({exc})") from None
    r = {k: vivado[k] for k in ("LUT", "FF", "CARRY", "BRAM", "RAMB18", "RAMB36", "DSP", "LUTRAM")}
    row = _row(Design(config, "host"), {**r, "rewind": True}, "vivado")
    row["design"] = f"{Design(config, 'host').name} [ZCU102 top, {vivado['tool']}]"
    row.update({k: None for k in TIMING_KEYS})
    timing = read_vivado_timing(run_dir)  # WNS -> Fmax, when Vivado wrote a timing summary
    if timing is not None:
        per_cycle = values_per_cycle(config, "host")
        throughput = per_cycle * timing["fmax_mhz"] * 1e6
        row.update(
            fmax_mhz=timing["fmax_mhz"],
            fmax_source="vivado",
            fmax_target="ZCU102 xczu9eg (Vivado)",
            logic_levels=timing.get("logic_levels"),
            values_per_cycle=per_cycle,
            throughput_values_per_s=throughput,
            throughput_per_lut=round(throughput / row["LUT"], 1),
            critical_path_ends=timing.get("report", ""),
        )
    return row
