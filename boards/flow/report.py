"""The one entry that builds resource reports: one design synthesised with Yosys (``report``: a perturbation
generator or unit; ``engine_report``, ``net_engine_report``: the ZO engines; ``board_report``: the ZCU102
trainer's engine top), cached by config and circuit source. Hand estimates and budgets: ``estimates``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from amaranth.back import verilog

import pezo.golden.config
import pezo.golden.engine
import pezo.golden.regs
import pezo.golden.regs.engine
import pezo.golden.rng
import pezo.hw
from pezo.boards.flow.estimates import budget, engine_bram36_estimate, grng_lut_estimate, pool_bram18_minimum
from pezo.boards.flow.synth import TOOL, SynthesisRejected, is_cached, synthesize
from pezo.golden.config import PerturbConfig
from pezo.golden.engine.network import NetConfig
from pezo.golden.regs.engine import BoardMap
from pezo.golden.rng.scale import check_scalable, lut_statistics
from pezo.hw.engine.net_engine import NetEngine
from pezo.hw.engine.zo_engine import ZOEngine
from pezo.hw.engine_top import EngineTop
from pezo.hw.host import StreamHost
from pezo.hw.rng.perturb import PerturbationStream
from pezo.hw.rng.scale import ScaleLUT, rom_style
from pezo.hw.strategies import STRATEGIES, strategy

STREAM_TOP = "pezo_perturb_stream"
SCALE_TOP = "pezo_scale_lut"
HOST_TOP = "pezo_stream_host"
UNITS = ("generator", "stream", "scale", "host")
"""What ``report`` synthesizes: the strategy's generator alone, the whole perturbation stream unit
(generator + rewind + scaling + sign + control, what the PE array consumes), the otf scale LUT, or the
host (the stream behind the AXI4-Lite register file: the ZCU102 design's logic, without the PS)."""
CIRCUIT_SOURCES = (pezo.golden.config, pezo.golden.regs, pezo.golden.rng, pezo.golden.engine, pezo.hw)
"""What the circuits are generated from (packages: every module below them); nothing else enters a cache key."""


def _hash_sources() -> str:
    digest = hashlib.sha256()
    for module in CIRCUIT_SOURCES:
        path = Path(module.__file__)
        files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
        for file in files:
            digest.update(f"{module.__name__}:{file.relative_to(path.parent)}".encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


_SOURCE_HASH = _hash_sources()  # read once, when this module is imported (with the circuits' modules, above)


def source_hash() -> str:
    """Hash of the sources the circuits are generated from (the config, the golden twins of hw, hw itself):
    part of every cache key, so editing a block invalidates it, and editing a trainer does not. Read when this
    process imported them: a run that outlives an edit stores its results under the sources it elaborated, not
    under the edited ones."""
    return _SOURCE_HASH


def design_key(config: PerturbConfig, unit: str = "generator") -> str:
    return json.dumps({"config": config.to_dict(), "unit": unit, "source": source_hash()}, sort_keys=True)


def check_unit(config: PerturbConfig, unit: str) -> None:
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    if unit == "scale" and config.strategy != "otf":
        raise ValueError(f"unit 'scale' (the otf scale LUT) needs strategy otf, got {config.strategy!r}")
    if config.strategy == "otf" and unit != "generator":
        check_scalable(config)


def top_name(config: PerturbConfig, unit: str = "generator") -> str:
    if unit == "generator":
        return strategy(config.strategy).top_name
    return {"stream": STREAM_TOP, "scale": SCALE_TOP, "host": HOST_TOP}[unit]


def unit_component(config: PerturbConfig, unit: str = "generator"):
    """The Amaranth component ``report`` synthesizes for (config, unit)."""
    check_unit(config, unit)
    if unit == "generator":
        return strategy(config.strategy).generator(config)
    return {"stream": PerturbationStream, "scale": ScaleLUT, "host": StreamHost}[unit](config)


def generator_verilog(config: PerturbConfig, unit: str = "generator") -> tuple[str, str]:
    """Verilog text and top-module name of ``unit`` (default: the perturbation generator) for ``config``."""
    top = top_name(config, unit)
    return verilog.convert(unit_component(config, unit), name=top, emit_src=False), top


def is_report_cached(config: PerturbConfig, unit: str = "generator") -> bool:
    configs = [config]
    if config.rewind and config.strategy == "otf" and unit == "generator":
        configs.append(config.replace(rewind=False))
    return all(is_cached(design_key(c, unit), top_name(c, unit)) for c in configs)


def _cached_synthesis(key: str, top: str, verilog_text, use_cache: bool) -> dict:
    """``synthesize`` by ``key``; ``verilog_text()`` (the Amaranth conversion) runs only on a cache miss."""
    if use_cache and is_cached(key, top):
        return synthesize("", top, key=key)
    return synthesize(verilog_text(), top, key=key, use_cache=use_cache)


def _synthesize(config: PerturbConfig, use_cache: bool, unit: str = "generator") -> dict:
    return _cached_synthesis(
        design_key(config, unit), top_name(config, unit), lambda: generator_verilog(config, unit)[0], use_cache
    )


def report(config: PerturbConfig, use_cache: bool = True, unit: str = "generator") -> dict:
    """Synthesize ``unit`` alone; return config fields, resources, budget and verdict.

    Integer keys LUT, FF, BRAM, DSP are the CLI contract (plus ``strategy`` and ``unit``). Generators
    carry a ``budget`` and ``within_budget``: otf the physical limit (with ``config.rewind`` the bare
    array is synthesized too and ``overhead`` = rewind - bare), pregen the analytical BRAM minimum,
    gaussian 127 FF per generator (plus ``per_generator`` and the linear ``extrapolated_1024``).
    """
    check_unit(config, unit)
    resources = _synthesize(config, use_cache, unit)
    out = {
        "strategy": config.strategy,
        "unit": unit,
        "n_rngs": config.n_rngs,
        "rng_bits": config.rng_bits,
        "seed": config.seed,
        "rewind": config.rewind,
    }
    if config.strategy == "otf":
        out["lfsr_leap"] = config.lfsr_leap
        out["lfsr_bit_order"] = config.lfsr_bit_order
    out.update(resources)
    if unit != "generator":
        out.update(lanes=config.lanes, perturb_dim=config.perturb_dim, eps_shift=config.eps_shift, rewind=True)
        # the strategy's own fields not listed yet (pregen: pool_size, pool_bits, banks)
        out.update({k: v for k, v in strategy(config.strategy).config_fields(config).items() if k not in out})
        if unit == "scale":
            out.update(rom_style=rom_style(config), lut_statistics=lut_statistics(config))
    elif config.strategy == "pregen":
        bram18 = resources["RAMB18"] + 2 * resources["RAMB36"]
        minimum = pool_bram18_minimum(config)
        out.update(
            pool_size=config.pool_size,
            pool_bits=config.pool_bits,
            lanes=config.lanes,
            banks=config.banks,
            perturb_dim=config.perturb_dim,
            BRAM18_equivalent=bram18,
            budget={"BRAM18_equivalent": minimum, "LUTRAM": 0},
            rewind=True,
        )  # the pool's start register makes every pool rewindable
        out["within_budget"] = bram18 == minimum and resources["LUTRAM"] == 0
    elif config.strategy == "gaussian":
        lanes = config.lanes
        per = {k: resources[k] / lanes for k in ("LUT", "FF", "CARRY", "BRAM", "DSP")}
        ff = 127 * lanes * (2 if config.rewind else 1)
        out.update(
            lanes=lanes,
            generators=lanes,
            per_generator=per,
            extrapolated_1024={k: round(v * 1024) for k, v in per.items()},
            extrapolation=f"linear from {lanes} synthesised generators (each generator is independent "
            "logic; tests/boards/test_synth.py checks 1 vs 32)",
            analytical_LUT=grng_lut_estimate() * lanes,
            budget={"FF": ff},
            within_budget=resources["FF"] == ff,
        )
    elif config.rewind:
        limits = budget(config)
        bare = _synthesize(config.replace(rewind=False), use_cache)
        overhead = {k: resources[k] - bare[k] for k in ("LUT", "FF", "BRAM", "DSP")}
        out["bare"] = {k: bare[k] for k in ("LUT", "FF", "BRAM", "DSP", "CARRY")}
        out["overhead"] = overhead
        out["budget"] = limits["rewind_overhead"]
        out["within_budget"] = all(overhead[k] <= limits["rewind_overhead"][k] for k in ("LUT", "FF"))
    else:
        limits = budget(config)
        out["budget"] = limits["bare"]
        out["within_budget"] = all(resources[k] <= limits["bare"][k] for k in ("LUT", "FF"))
    out["tool"] = TOOL
    return out


# -- the ZO engine (PE array + perturbation stream + controller) -------------------------------------
ENGINE_TOP = "pezo_zo_engine"
NET_ENGINE_TOP = "pezo_net_engine"
ENGINE_STRATEGIES = {f"engine-{name}": name for name, s in STRATEGIES.items() if s.engine}
"""``pezo report --strategy`` names of the engine at its default size, with either perturbation stream."""


def engine_key(config) -> str:
    return json.dumps({"engine": config.to_dict(), "source": source_hash()}, sort_keys=True)


G_PRODUCTS = 2
"""DSP blocks per lane for the engines' g * p (g = g_hi * 2^17 + g_lo: two partial products, ``hw.engine.update``)."""


def engine_report(config, use_cache: bool = True) -> dict:
    """Synthesize ``hw.engine.zo_engine.ZOEngine(config)``; the keys of ``report`` (strategy ``engine-otf`` /
    ``engine-pregen``, unit ``engine``, LUT, FF, BRAM, DSP, ...) plus the array shape, the analytical
    DSP count (one DSP48E2 per int8 MAC + ``G_PRODUCTS`` per lane for g * p) and BRAM36 estimate, and the
    step's cycle bound."""
    resources = _cached_synthesis(
        engine_key(config),
        ENGINE_TOP,
        lambda: verilog.convert(ZOEngine(config), name=ENGINE_TOP, emit_src=False),
        use_cache,
    )
    dsp_budget = config.array.macs + G_PRODUCTS * config.array.cols
    out = {
        "strategy": f"engine-{config.stream.strategy}",
        "unit": "engine",
        **resources,
        "rows": config.array.rows,
        "cols": config.array.cols,
        "macs": config.array.macs,
        "batch": config.array.batch,
        "inputs": config.inputs,
        "outputs": config.outputs,
        "weights": config.weights,
        "eps_shift": config.stream.eps_shift,
        "seed": config.stream.seed,
        "rewind": True,
        "cycle_bound": config.cycle_bound(),
        "engine": config.to_dict(),
        "analytical_DSP": dsp_budget,
        "analytical_BRAM36": engine_bram36_estimate(config),
        "BRAM36": resources["RAMB36"] + resources["RAMB18"] / 2,
        "budget": {"DSP": dsp_budget},
        "within_budget": resources["DSP"] <= dsp_budget,
    }
    if config.stream.strategy == "otf":
        out.update(n_rngs=config.array.cols, rng_bits=config.stream.rng_bits)
    else:
        out.update(pool_size=config.stream.pool_size, pool_bits=config.stream.pool_bits, lanes=config.array.cols)
    out["tool"] = TOOL
    return out


def net_engine_report(config, use_cache: bool = True) -> dict:
    """Synthesize ``hw.engine.net_engine.NetEngine(config)`` (a ``NetConfig``): the keys of
    ``engine_report`` for the network engine (``net``, ``layers``, weights, the step's cycle bound), with
    its DSP budget: one DSP48E2 per int8 MAC + two per lane for g * p (``G_PRODUCTS``: the update splits g
    into two partial products, each fitting an ECP5 18 x 18 multiplier)."""
    key = json.dumps({"net_engine": config.to_dict(), "source": source_hash()}, sort_keys=True)
    resources = _cached_synthesis(
        key, NET_ENGINE_TOP, lambda: verilog.convert(NetEngine(config), name=NET_ENGINE_TOP, emit_src=False), use_cache
    )
    dsp_budget = config.array.macs + G_PRODUCTS * config.array.cols
    out = {
        "strategy": f"engine-{config.stream.strategy}",
        "unit": "engine",
        **resources,
        "net": config.name,
        "layers": [layer.describe() for layer in config.layers],
        "rows": config.array.rows,
        "cols": config.array.cols,
        "macs": config.array.macs,
        "batch": config.array.batch,
        "inputs": config.inputs,
        "outputs": config.outputs,
        "weights": config.weights,
        "eps_shift": config.stream.eps_shift,
        "seed": config.stream.seed,
        "rewind": True,
        "cycle_bound": config.cycle_bound(),
        "engine": config.to_dict(),
        "analytical_DSP": dsp_budget,
        "BRAM36": resources["RAMB36"] + resources["RAMB18"] / 2,
        "budget": {"DSP": dsp_budget},
        "within_budget": resources["DSP"] <= dsp_budget,
    }
    if config.stream.strategy == "otf":
        out.update(n_rngs=config.array.cols, rng_bits=config.stream.rng_bits)
    else:
        out.update(pool_size=config.stream.pool_size, pool_bits=config.stream.pool_bits, lanes=config.array.cols)
    out["tool"] = TOOL
    return out


# -- the ZCU102 trainer's engine top (network engine + AXI4-Lite registers + AXI4 burst slave) -----------
BOARD_TOP = "pezo_engine_top"
RESOURCE_KEYS = ("LUT", "FF", "BRAM", "DSP", "CARRY", "LUTRAM", "SRL")


def board_report(config: NetConfig, use_cache: bool = True) -> dict:
    """Synthesize the engine top of ``config`` (``pezo report --strategy engine-otf|engine-pregen --unit board``:
    ``hw.engine_top.EngineTop``, the network engine plus the AXI4-Lite registers, the AXI4 burst slave and the
    step log, ``synth_xilinx -family xcup``); integer LUT, FF, BRAM, DSP (the CLI contract) and the keys of
    ``net_engine_report``; with the engine alone already synthesised (cached), also the AXI overhead (top - engine)."""
    bmap = BoardMap(config)
    map_source = hashlib.sha256(
        Path(pezo.golden.regs.engine.__file__).read_bytes()
    ).hexdigest()  # not in CIRCUIT_SOURCES
    key = json.dumps({"engine_top": config.to_dict(), "source": source_hash(), "map": map_source}, sort_keys=True)
    resources = _cached_synthesis(
        key, BOARD_TOP, lambda: verilog.convert(EngineTop(config), name=BOARD_TOP, emit_src=False), use_cache
    )
    out = {
        "strategy": f"engine-{config.stream.strategy}",
        "unit": "board",
        "design": "engine top (AXI4-Lite + AXI4 + engine)",
        **resources,
        "net": config.name,
        "layers": [l.describe() for l in config.layers],
        "rows": config.array.rows,
        "cols": config.array.cols,
        "batch": config.array.batch,
        "weights": config.weights,
        "engine": config.to_dict(),
        "BRAM36": resources["RAMB36"] + resources["RAMB18"] / 2,
        "cycle_bound": config.cycle_bound(),
        "axi_addr_width": bmap.addr_width,
        "tool": TOOL,
    }
    engine_key = json.dumps({"net_engine": config.to_dict(), "source": source_hash()}, sort_keys=True)
    if is_cached(engine_key, NET_ENGINE_TOP):  # the engine alone, when pezo report --net has synthesised it
        try:
            engine = _cached_synthesis(engine_key, NET_ENGINE_TOP, lambda: "", True)
        except SynthesisRejected:  # Yosys rejected the engine alone (a stored failure): no overhead to report
            return out
        out["engine_only"] = {k: engine[k] for k in RESOURCE_KEYS if k in engine}
        out["axi_overhead"] = {k: resources[k] - engine[k] for k in RESOURCE_KEYS if k in engine and k in resources}
    return out
