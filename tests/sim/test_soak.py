"""Soak: 10^6 cycles of the perturbation stream per strategy on Verilator, every value against golden,
with about 10^4 next/rewind commands each. Slow (about a minute per strategy); CI runs it."""

import json

import pytest

from pezo.golden.config import PerturbConfig
from pezo.sim.runner import run_bench

SOAK_CYCLES = 1_000_000
SOAKS = {
    "otf": PerturbConfig(n_rngs=32, rng_bits=14, perturb_dim=64),
    "pregen": PerturbConfig(strategy="pregen", perturb_dim=1000),
    "gaussian": PerturbConfig(strategy="gaussian"),
}


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.parametrize("strategy", SOAKS)
def test_stream_soak(strategy, require_simulator, sim_build):
    require_simulator("verilator")
    build = sim_build / f"soak-{strategy}"
    result = run_bench("stream", SOAKS[strategy], "verilator", build / "verilator", SOAK_CYCLES, seed=2026)
    assert result["cycles"] == SOAK_CYCLES and result["comparisons"] >= SOAK_CYCLES
    assert result["next"] >= 5000 and result["rewind"] >= 5000
    (build / "soak.json").write_text(json.dumps({"strategy": strategy, **result}, indent=2))
    print(
        f"soak {strategy}: {SOAK_CYCLES} cycles, 0 mismatches, {result['test_s']:.0f} s "
        f"({result['cycles_per_s']:.0f} cycles/s)"
    )
