"""The timing side of ``pezo report`` (one design's Fmax, logic levels and critical path), shared by the
report of a unit and of the engine top (``pezo report --unit board``)."""

from __future__ import annotations

import sys


def timing_keys(config, unit: str, luts: int, args) -> dict:
    """The timing keys of one design (``boards.flow.timing.unit_timing``; None each with --no-timing)."""
    from pezo.boards.flow.timing import TIMING_KEYS, is_timing_cached, unit_timing, unit_verilog

    if args.no_timing:
        return {k: None for k in TIMING_KEYS}
    if args.no_cache or not is_timing_cached(unit_verilog(config, unit)[2]):  # stderr, so with --json too
        print(
            "placing and routing on ECP5 with nextpnr, 3 seeds (10 s - 3 min; --no-timing skips it) ...",
            file=sys.stderr,
        )
    result = unit_timing(config, unit, luts=luts, use_cache=not args.no_cache)
    if not args.timing_path:
        result.pop("critical_path")
    return result


def print_timing(result: dict, args) -> None:
    if result.get("fmax_mhz") is None:
        return
    throughput = result["throughput_values_per_s"]
    print(
        f"  Fmax {result['fmax_mhz']:.1f} MHz ({result['fmax_target']}, nextpnr, median of seeds "
        f"{', '.join(result['fmax_per_seed'])}: {', '.join(f'{v:.0f}' for v in result['fmax_per_seed'].values())}); "
        f"xcup logic levels {result['logic_levels']}"
    )
    if throughput:
        print(
            f"  throughput {throughput / 1e6:.0f} Mvalues/s ({result['values_per_cycle']} a cycle), "
            f"{result['throughput_per_lut']:.0f} values/s per LUT"
        )
    print(f"  critical path: {result['critical_path_ends']}")
    if args.timing_path:
        print("\n".join(f"    {line}" for line in result["critical_path"]))
