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

from golden.config import PerturbConfig
from boards.synth import TOOL, is_cached, synthesize

URNG_TOP = "pezo_urng_array"
POOL_TOP = "pezo_pool_reader"
TOPS = {"otf": URNG_TOP, "pregen": POOL_TOP}
# RAMB18E2 aspect ratios (depth, width); a RAMB36E2 counts as two
RAMB18_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
_SOURCE_DIRS = ("golden", "hw")
PEZO_TABLE6 = [  # PeZO Table 6, random-number generation part on ZCU102 (Vivado)
    {"design": "MeZO: 1024 Gaussian RNGs (TreeGRNG)", "LUT": 133120, "FF": 69632, "BRAM": 0},
    {"design": "PeZO pre-gen: 4096 x 12 bit pool", "LUT": 0, "FF": 16, "BRAM": 8},
    {"design": "PeZO on-the-fly: 32 URNGs x 8 bit", "LUT": 32, "FF": 449, "BRAM": 0},
    {"design": "PeZO on-the-fly: 32 URNGs x 14 bit", "LUT": 32, "FF": 512, "BRAM": 0},
]


def source_hash() -> str:
    """Hash of the golden + hw sources: part of every cache key, so editing a block invalidates it."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    for folder in _SOURCE_DIRS:
        for path in sorted((root / folder).glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def design_key(config: PerturbConfig) -> str:
    return json.dumps({"config": config.to_dict(), "source": source_hash()}, sort_keys=True)


def generator_verilog(config: PerturbConfig) -> tuple[str, str]:
    """Verilog text and top-module name of the perturbation generator for ``config``."""
    from amaranth.back import verilog

    if config.strategy == "otf":
        from hw.urng import URNGArray
        return verilog.convert(URNGArray(config), name=URNG_TOP, emit_src=False), URNG_TOP
    if config.strategy == "pregen":
        from hw.pool import PoolReader
        return verilog.convert(PoolReader(config), name=POOL_TOP, emit_src=False), POOL_TOP
    raise ValueError(f"strategy {config.strategy!r} has no generator yet; available: otf, pregen")


def pool_bram18_minimum(config: PerturbConfig) -> int:
    """Fewest RAMB18 (a RAMB36 = 2) that hold the banked pool: per bank, depth ceil((N+lanes-1)/banks)
    x pool_bits in the best RAMB18 aspect ratio, one RAMB18 per two read ports."""
    from golden.pool import bank_depth

    depth = bank_depth(config)
    per_bank = min(-(-depth // d) * -(-config.pool_bits // w) for d, w in RAMB18_SHAPES)
    ports = config.lanes // config.banks
    return config.banks * per_bank * -(-ports // 2)


def budget(config: PerturbConfig) -> dict:
    """Resource budget of the bare array, and of the rewind overhead."""
    n, b = config.n_rngs, config.rng_bits
    log_n = math.ceil(math.log2(n)) if n > 1 else 0
    return {"bare": {"LUT": n + log_n, "FF": n * b + log_n + 2},
            "rewind_overhead": {"LUT": n * b, "FF": n * b}}


def is_report_cached(config: PerturbConfig) -> bool:
    configs = [config, config.replace(rewind=False)] if config.rewind and config.strategy == "otf" else [config]
    return all(is_cached(design_key(c), TOPS.get(c.strategy, "")) for c in configs)


def _synthesize(config: PerturbConfig, use_cache: bool) -> dict:
    key = design_key(config)
    top = TOPS.get(config.strategy, "")
    if use_cache and is_cached(key, top):
        return synthesize("", top, key=key)
    text, top = generator_verilog(config)
    return synthesize(text, top, key=key, use_cache=use_cache)


def report(config: PerturbConfig, use_cache: bool = True) -> dict:
    """Synthesize the generator alone; return config fields, resources, budget and verdict.

    Integer keys LUT, FF, BRAM, DSP are the CLI contract. With ``config.rewind`` the bare array is
    synthesized too and ``overhead`` = rewind - bare.
    """
    resources = _synthesize(config, use_cache)
    limits = budget(config)
    out = {"strategy": config.strategy, "n_rngs": config.n_rngs, "rng_bits": config.rng_bits,
           "seed": config.seed, "rewind": config.rewind}
    out.update(resources)
    if config.strategy == "pregen":
        bram18 = resources["RAMB18"] + 2 * resources["RAMB36"]
        minimum = pool_bram18_minimum(config)
        out.update(pool_size=config.pool_size, pool_bits=config.pool_bits, lanes=config.lanes,
                   banks=config.banks, perturb_dim=config.perturb_dim, BRAM18_equivalent=bram18,
                   budget={"BRAM18_equivalent": minimum, "LUTRAM": 0},
                   rewind=True)  # the pool's start register makes every pool rewindable
        out["within_budget"] = bram18 == minimum and resources["LUTRAM"] == 0
    elif config.rewind:
        bare = _synthesize(config.replace(rewind=False), use_cache)
        overhead = {k: resources[k] - bare[k] for k in ("LUT", "FF", "BRAM", "DSP")}
        out["bare"] = {k: bare[k] for k in ("LUT", "FF", "BRAM", "DSP", "CARRY")}
        out["overhead"] = overhead
        out["budget"] = limits["rewind_overhead"]
        out["within_budget"] = all(overhead[k] <= limits["rewind_overhead"][k] for k in ("LUT", "FF"))
    else:
        out["budget"] = limits["bare"]
        out["within_budget"] = all(resources[k] <= limits["bare"][k] for k in ("LUT", "FF"))
    out["tool"] = TOOL
    return out
