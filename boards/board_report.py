"""Resources of the engine top (``pezo report --strategy engine-otf|engine-pregen --unit board``): Yosys
``synth_xilinx -family xcup`` of ``hw.engine_top.EngineTop`` -- the network engine plus the AXI4-Lite
registers, the AXI4 burst slave and the step log -- with the keys of ``boards.flow.report.net_engine_report``;
with the engine alone already synthesised (cached), also the AXI overhead (top - engine)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from amaranth.back import verilog

from pezo.boards.flow.report import NET_ENGINE_TOP, _cached_synthesis, is_cached, source_hash
from pezo.boards.flow.synth import TOOL
from pezo.golden import board_map
from pezo.golden.board_map import BoardMap
from pezo.golden.engine.network import NetConfig
from pezo.hw.engine_top import EngineTop

BOARD_TOP = "pezo_engine_top"
RESOURCE_KEYS = ("LUT", "FF", "BRAM", "DSP", "CARRY", "LUTRAM", "SRL")


def board_report(config: NetConfig, use_cache: bool = True) -> dict:
    """Synthesize the engine top of ``config``; integer LUT, FF, BRAM, DSP (the CLI contract) and the rest."""
    bmap = BoardMap(config)
    map_source = hashlib.sha256(Path(board_map.__file__).read_bytes()).hexdigest()  # not in CIRCUIT_SOURCES
    key = json.dumps({"engine_top": config.to_dict(), "source": source_hash(), "map": map_source}, sort_keys=True)
    resources = _cached_synthesis(key, BOARD_TOP, lambda: verilog.convert(EngineTop(config), name=BOARD_TOP,
                                                                          emit_src=False), use_cache)
    out = {"strategy": f"engine-{config.strategy}", "unit": "board", "design": "engine top (AXI4-Lite + AXI4 + engine)",
           **resources, "net": config.name, "layers": [l.describe() for l in config.layers], "rows": config.rows,
           "cols": config.cols, "batch": config.batch, "weights": config.weights, "engine": config.to_dict(),
           "BRAM36": resources["RAMB36"] + resources["RAMB18"] / 2, "cycle_bound": config.cycle_bound(),
           "axi_addr_width": bmap.addr_width, "tool": TOOL}
    engine_key = json.dumps({"net_engine": config.to_dict(), "source": source_hash()}, sort_keys=True)
    if is_cached(engine_key, NET_ENGINE_TOP):  # the engine alone, when pezo report --net has synthesised it
        engine = _cached_synthesis(engine_key, NET_ENGINE_TOP, lambda: "", True)
        out["engine_only"] = {k: engine[k] for k in RESOURCE_KEYS if k in engine}
        out["axi_overhead"] = {k: resources[k] - engine[k] for k in RESOURCE_KEYS if k in engine and k in resources}
    return out
