"""Resource reports for perturbation generators: one config -> LUT/FF/BRAM/DSP (+ budgets).

Budgets (from the PeZO hardware target, Table 6: 32 URNGs = 32 LUT + 449 / 512 FF on ZCU102):
bare on-the-fly array  FF <= n*b + ceil(log2 n) + 2,  LUT <= n + ceil(log2 n);
rewind overhead        <= n*b LUT + n*b FF over the bare array.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from amaranth.back import verilog

import pezo.golden.config
import pezo.golden.engine
import pezo.golden.host
import pezo.golden.rng
import pezo.hw
from pezo.boards.flow.synth import TOOL, is_cached, synthesize
from pezo.golden.config import PerturbConfig
from pezo.golden.rng.lfsr import leap_feedback
from pezo.golden.rng.pool import bank_depth
from pezo.golden.rng.scale import check_scalable, lut_statistics
from pezo.hw.engine.net_engine import NetEngine
from pezo.hw.engine.zo_engine import ZOEngine
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
# RAMB18E2 aspect ratios (depth, width); a RAMB36E2 counts as two
RAMB18_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
CIRCUIT_SOURCES = (pezo.golden.config, pezo.golden.host, pezo.golden.rng, pezo.golden.engine, pezo.hw)
"""What the circuits are generated from (packages: every module below them); nothing else enters a cache key."""
PEZO_TABLE6 = [  # PeZO Table 6, random-number generation part on ZCU102 (Vivado)
    {"design": "MeZO: 1024 Gaussian RNGs (TreeGRNG)", "LUT": 133120, "FF": 69632, "BRAM": 0},
    {"design": "PeZO pre-gen: 4096 x 12 bit pool", "LUT": 0, "FF": 16, "BRAM": 8},
    {"design": "PeZO on-the-fly: 32 URNGs x 8 bit", "LUT": 32, "FF": 449, "BRAM": 0},
    {"design": "PeZO on-the-fly: 32 URNGs x 14 bit", "LUT": 32, "FF": 512, "BRAM": 0},
]


def source_hash() -> str:
    """Hash of the sources the circuits are generated from (the config, the golden twins of hw, hw itself):
    part of every cache key, so editing a block invalidates it, and editing a trainer does not."""
    digest = hashlib.sha256()
    for module in CIRCUIT_SOURCES:
        path = Path(module.__file__)
        files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
        for file in files:
            digest.update(f"{module.__name__}:{file.relative_to(path.parent)}".encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


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


def grng_lut_estimate() -> int:
    """LUTs of one CLT generator by hand: 96 XORs + one LUT per adder output bit (6 x 8 + 3 x 9 + 10
    + 11 for the tree, 12 for subtracting 1530)."""
    return 96 + 6 * 8 + 3 * 9 + 10 + 11 + 12


def pool_bram18_minimum(config: PerturbConfig) -> int:
    """Fewest RAMB18 (a RAMB36 = 2) that hold the banked pool: per bank, depth ceil((N+lanes-1)/banks)
    x pool_bits in the best RAMB18 aspect ratio, one RAMB18 per two read ports."""
    depth = bank_depth(config)
    per_bank = min(-(-depth // d) * -(-config.pool_bits // w) for d, w in RAMB18_SHAPES)
    ports = config.lanes // config.banks
    return config.banks * per_bank * -(-ports // 2)


def lfsr_luts(bits: int, leap: int = 1) -> int:
    """LUT6s of one LFSR's next state: per state bit an XOR of ``leap_feedback`` inputs, 0 for a wire, else
    a tree of ceil((f - 1) / 5) LUT6 (1 for PeZO's array: one feedback LUT; 22 for b = k = 14)."""
    return sum(-(-(len(row) - 1) // 5) for row in leap_feedback(bits, leap))


def budget(config: PerturbConfig) -> dict:
    """Resource budget of the bare array (n LUTs at leap 1, the physical limit; n * ``lfsr_luts`` with a
    leap-forward LFSR), and of the rewind overhead."""
    n, b = config.n_rngs, config.rng_bits
    log_n = math.ceil(math.log2(n)) if n > 1 else 0
    return {"bare": {"LUT": n * lfsr_luts(b, config.lfsr_leap) + log_n, "FF": n * b + log_n + 2},
            "rewind_overhead": {"LUT": n * b, "FF": n * b}}


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
    return _cached_synthesis(design_key(config, unit), top_name(config, unit),
                             lambda: generator_verilog(config, unit)[0], use_cache)


def report(config: PerturbConfig, use_cache: bool = True, unit: str = "generator") -> dict:
    """Synthesize ``unit`` alone; return config fields, resources, budget and verdict.

    Integer keys LUT, FF, BRAM, DSP are the CLI contract (plus ``strategy`` and ``unit``). Generators
    carry a ``budget`` and ``within_budget``: otf the physical limit (with ``config.rewind`` the bare
    array is synthesized too and ``overhead`` = rewind - bare), pregen the analytical BRAM minimum,
    gaussian 127 FF per generator (plus ``per_generator`` and the linear ``extrapolated_1024``).
    """
    check_unit(config, unit)
    resources = _synthesize(config, use_cache, unit)
    out = {"strategy": config.strategy, "unit": unit, "n_rngs": config.n_rngs, "rng_bits": config.rng_bits,
           "seed": config.seed, "rewind": config.rewind}
    if config.strategy == "otf":
        out["lfsr_leap"] = config.lfsr_leap
        out["lfsr_bit_order"] = config.lfsr_bit_order
    out.update(resources)
    if unit != "generator":
        out.update(lanes=config.lanes, perturb_dim=config.perturb_dim, eps_shift=config.eps_shift,
                   rewind=True)
        # the strategy's own fields not listed yet (pregen: pool_size, pool_bits, banks)
        out.update({k: v for k, v in strategy(config.strategy).config_fields(config).items() if k not in out})
        if unit == "scale":
            out.update(rom_style=rom_style(config), lut_statistics=lut_statistics(config))
    elif config.strategy == "pregen":
        bram18 = resources["RAMB18"] + 2 * resources["RAMB36"]
        minimum = pool_bram18_minimum(config)
        out.update(pool_size=config.pool_size, pool_bits=config.pool_bits, lanes=config.lanes,
                   banks=config.banks, perturb_dim=config.perturb_dim, BRAM18_equivalent=bram18,
                   budget={"BRAM18_equivalent": minimum, "LUTRAM": 0},
                   rewind=True)  # the pool's start register makes every pool rewindable
        out["within_budget"] = bram18 == minimum and resources["LUTRAM"] == 0
    elif config.strategy == "gaussian":
        lanes = config.lanes
        per = {k: resources[k] / lanes for k in ("LUT", "FF", "CARRY", "BRAM", "DSP")}
        ff = 127 * lanes * (2 if config.rewind else 1)
        out.update(lanes=lanes, generators=lanes, per_generator=per,
                   extrapolated_1024={k: round(v * 1024) for k, v in per.items()},
                   extrapolation=f"linear from {lanes} synthesised generators (each generator is independent "
                                 "logic; tests/boards/test_synth.py checks 1 vs 32)",
                   analytical_LUT=grng_lut_estimate() * lanes, budget={"FF": ff},
                   within_budget=resources["FF"] == ff)
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


def engine_bram36_estimate(config) -> float:
    """Fewest BRAM36 tiles by hand: weight memory (words of C int8) and activation memory (R x C int8 per
    word), each ceil(width / 72) tiles of a 512 x 72 port while depth <= 512 (else 1K x 36 ...), plus the
    pregen pool (``pool_bram18_minimum`` / 2); the logit memory (2 * tiles * outputs words) is LUT-RAM."""
    def tiles(depth: int, width: int) -> int:
        return min(-(-depth // d) * -(-width // w) for d, w in ((512, 72), (1024, 36), (2048, 18), (4096, 9)))
    total = tiles(config.weight_words, 8 * config.cols) + tiles(config.tiles * config.words_per_output,
                                                                8 * config.cols * config.rows)
    if config.strategy == "pregen":
        total += pool_bram18_minimum(config.perturb) / 2
    return float(total)


def engine_report(config, use_cache: bool = True) -> dict:
    """Synthesize ``hw.engine.zo_engine.ZOEngine(config)``; the keys of ``report`` (strategy ``engine-otf`` /
    ``engine-pregen``, unit ``engine``, LUT, FF, BRAM, DSP, ...) plus the array shape, the analytical
    DSP count (one DSP48E2 per int8 MAC + one per lane for g * p) and BRAM36 estimate, and the step's
    cycle bound."""
    resources = _cached_synthesis(
        engine_key(config), ENGINE_TOP,
        lambda: verilog.convert(ZOEngine(config), name=ENGINE_TOP, emit_src=False), use_cache)
    dsp_budget = config.macs + config.cols
    out = {"strategy": f"engine-{config.strategy}", "unit": "engine", **resources,
           "rows": config.rows, "cols": config.cols, "macs": config.macs, "batch": config.batch,
           "inputs": config.inputs, "outputs": config.outputs, "weights": config.weights,
           "eps_shift": config.eps_shift, "seed": config.seed, "rewind": True,
           "cycle_bound": config.cycle_bound(), "engine": config.to_dict(),
           "analytical_DSP": dsp_budget, "analytical_BRAM36": engine_bram36_estimate(config),
           "BRAM36": resources["RAMB36"] + resources["RAMB18"] / 2,
           "budget": {"DSP": dsp_budget}, "within_budget": resources["DSP"] <= dsp_budget}
    if config.strategy == "otf":
        out.update(n_rngs=config.cols, rng_bits=config.rng_bits)
    else:
        out.update(pool_size=config.pool_size, pool_bits=config.pool_bits, lanes=config.cols)
    out["tool"] = TOOL
    return out


def net_engine_report(config, use_cache: bool = True) -> dict:
    """Synthesize ``hw.engine.net_engine.NetEngine(config)`` (a ``NetConfig``): the keys of
    ``engine_report`` for the network engine (``net``, ``layers``, weights, the step's cycle bound), with
    the same DSP budget: one DSP48E2 per int8 MAC + one per lane for g * p."""
    key = json.dumps({"net_engine": config.to_dict(), "source": source_hash()}, sort_keys=True)
    resources = _cached_synthesis(
        key, NET_ENGINE_TOP, lambda: verilog.convert(NetEngine(config), name=NET_ENGINE_TOP, emit_src=False),
        use_cache)
    dsp_budget = config.macs + config.cols
    out = {"strategy": f"engine-{config.strategy}", "unit": "engine", **resources, "net": config.name,
           "layers": [layer.describe() for layer in config.layers], "rows": config.rows, "cols": config.cols,
           "macs": config.macs, "batch": config.batch, "inputs": config.inputs, "outputs": config.outputs,
           "weights": config.weights, "eps_shift": config.eps_shift, "seed": config.seed, "rewind": True,
           "cycle_bound": config.cycle_bound(), "engine": config.to_dict(), "analytical_DSP": dsp_budget,
           "BRAM36": resources["RAMB36"] + resources["RAMB18"] / 2, "budget": {"DSP": dsp_budget},
           "within_budget": resources["DSP"] <= dsp_budget}
    if config.strategy == "otf":
        out.update(n_rngs=config.cols, rng_bits=config.rng_bits)
    else:
        out.update(pool_size=config.pool_size, pool_bits=config.pool_bits, lanes=config.cols)
    out["tool"] = TOOL
    return out
