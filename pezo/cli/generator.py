"""The generator options shared by the hardware commands (``--strategy``, ``--n-rngs``, ...): the
argparse arguments, the config they build (one clear error per bad or inapplicable option), a design's name."""

from __future__ import annotations

import argparse

from pezo.cli.args import CLIError, option_error, raw
from pezo.golden.config import STRATEGIES, PerturbConfig

# -- the generator options -----------------------------------------------------------------------------

GENERATOR_FIELDS = PerturbConfig.JSON_KEYS
"""The generator options, one per ``PerturbConfig`` field, in its JSON order."""
ONLY_FOR = {
    "n_rngs": ("otf",),
    "rng_bits": ("otf",),
    "lfsr_leap": ("otf",),
    "lfsr_bit_order": ("otf",),
    "pool_size": ("pregen",),
    "pool_bits": ("pregen",),
    "banks": ("pregen",),
    "lanes": ("pregen", "gaussian"),
}


def _given(args) -> list[str]:
    """Generator options given on the command line (all default to None)."""
    return [f for f in GENERATOR_FIELDS if getattr(args, f, None) is not None and getattr(args, f, None) is not False]


def _config(args, unit: str | None = None) -> PerturbConfig:
    """The config of the generator options (defaults filled in), checked against the unit and for options
    that do not apply to the strategy (one error line naming the field)."""
    from pezo.boards.flow.report import check_unit

    fields = {f: getattr(args, f) for f in GENERATOR_FIELDS if getattr(args, f, None) is not None}
    strategy = fields.get("strategy", "otf")
    for field, strategies in ONLY_FOR.items():
        if field in fields and strategy in STRATEGIES and strategy not in strategies:
            raise CLIError(
                f"--{field.replace('_', '-')} applies to --strategy {' / '.join(strategies)} only, not {strategy}"
            )
    built = unit or getattr(args, "unit", None) or "generator"
    if "eps_shift" in fields and built in ("generator", "scale"):  # only the stream scales by epsilon
        raise CLIError(
            f"--eps-shift applies to --unit stream / host only (the stream scales its values by "
            f"epsilon); the {'otf scale LUT' if built == 'scale' else built} does not use it, so its design "
            "would be the same"
        )
    try:
        config = PerturbConfig(**fields)
        check_unit(config, unit or getattr(args, "unit", None) or "generator")
    except ValueError as exc:
        options = {**{f: "--" + f.replace("_", "-") for f in GENERATOR_FIELDS}, "unit": "--unit"}
        raise option_error(exc, options, [*fields, "unit"], PerturbConfig()) from None
    return config


def _add_generator_args(
    p: argparse.ArgumentParser, unit: bool = True, engine: bool = False, perturb_dim: int | None = None
) -> None:
    p.add_argument(
        "--strategy",
        help=f"perturbation strategy: {', '.join(STRATEGIES)} (default otf)"
        + ("; also engine-otf / engine-pregen (the ZO engine: PE array + stream)" if engine else ""),
    )
    if unit:
        p.add_argument(
            "--unit",
            help="what to build: generator (the strategy's random source alone, default), "
            "stream (the perturbation stream unit: source + rewind + scaling + sign), scale (the "
            "otf scale LUT), host (the stream behind the AXI4-Lite register file)",
        )
    p.add_argument("--n-rngs", type=raw, metavar="N", help="otf: URNGs in the array, 1..1024 (default 32)")
    p.add_argument("--rng-bits", type=raw, metavar="B", help="otf: bits per URNG, 3..32 (default 14)")
    p.add_argument(
        "--lfsr-leap",
        type=raw,
        metavar="K",
        help="otf: LFSR steps per clock (leap-forward), 1..B, "
        "coprime to 2^B-1 (default 1, PeZO's array; B decorrelates the lanes, about K LUTs per URNG)",
    )
    p.add_argument(
        "--lfsr-bit-order",
        metavar="ORDER",
        help="otf: how a lane reads its LFSR state: spread "
        "(default: a fixed bit permutation, wiring, no LUTs; takes the correlation of lanes n-1 apart "
        "from +0.48 to +0.05) or natural (PeZO's array as published)",
    )
    p.add_argument("--seed", type=raw, metavar="S", help="master seed, 1..2^B-1 (default 1)")
    p.add_argument(
        "--rewind",
        action="store_true",
        help="include the save/restore (rewind) path (otf and "
        "gaussian generators; the pool and every stream unit always have it)",
    )
    defaults = PerturbConfig()
    p.add_argument(
        "--pool-size",
        type=raw,
        metavar="N",
        help=f"pregen: values in the pool, lanes..2^20 (default {defaults.pool_size})",
    )
    p.add_argument(
        "--pool-bits", type=raw, metavar="W", help=f"pregen: bits per pool value, 4..18 (default {defaults.pool_bits})"
    )
    p.add_argument(
        "--lanes",
        type=raw,
        metavar="L",
        help=f"pregen / gaussian: values (generators) per cycle, 1..1024 (default {defaults.lanes})",
    )
    p.add_argument(
        "--banks",
        type=raw,
        metavar="K",
        help=f"pregen: BRAM banks, a power of two dividing lanes (default {defaults.banks})",
    )
    p.add_argument(
        "--perturb-dim",
        type=raw,
        metavar="D",
        help=f"values per perturbation, 1..2^31-1 (default {perturb_dim or defaults.perturb_dim})",
    )
    p.add_argument(
        "--eps-shift",
        type=raw,
        metavar="S",
        help=f"stream: epsilon = 2^(12-S) output LSBs, 0..24 (default {defaults.eps_shift})",
    )


def _design_name(config: PerturbConfig, unit: str) -> str:
    from pezo.boards.flow.comparison_rows import Design

    return Design(config, unit).name


# -- pezo report -------------------------------------------------------------------------------------
