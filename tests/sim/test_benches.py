"""cocotb: every block's generated Verilog against golden, on Icarus and on Verilator.

Every output bit is compared every cycle for >= 10 000 cycles, with rewinds mid-run.
"""

import pytest

from pezo.golden.config import PerturbConfig
from pezo.sim.runner import SIMULATORS, run_bench

CASES = {
    "urng-32x14": ("urng", PerturbConfig(n_rngs=32, rng_bits=14)),
    "urng-31x8-rewind": ("urng", PerturbConfig(n_rngs=31, rng_bits=8, seed=77, rewind=True)),
    "urng-3x32-rewind": ("urng", PerturbConfig(n_rngs=3, rng_bits=32, seed=0x89ABCDEF, rewind=True)),
    "urng-32x14-leap14-rewind": ("urng", PerturbConfig(n_rngs=32, rng_bits=14, lfsr_leap=14, rewind=True)),
    "urng-32x14-spread-rewind": ("urng", PerturbConfig(n_rngs=32, rng_bits=14, lfsr_bit_order="spread", rewind=True)),
    "pool-4095x12-8lanes": ("pool", PerturbConfig(strategy="pregen", perturb_dim=1000)),
    "pool-1021x9-16lanes-4banks": (
        "pool",
        PerturbConfig(strategy="pregen", pool_size=1021, pool_bits=9, lanes=16, banks=4, perturb_dim=333),
    ),
    "scale-14bit": ("scale", PerturbConfig(n_rngs=32, rng_bits=14, perturb_dim=40)),
    "gaussian-16": ("gaussian", PerturbConfig(strategy="gaussian", lanes=16)),
    "stream-otf-32x14": ("stream", PerturbConfig(n_rngs=32, rng_bits=14, perturb_dim=7, eps_shift=10)),
    "stream-otf-5x6": ("stream", PerturbConfig(n_rngs=5, rng_bits=6, perturb_dim=3, eps_shift=3)),
    "stream-otf-32x14-leap14": (
        "stream",
        PerturbConfig(n_rngs=32, rng_bits=14, lfsr_leap=14, perturb_dim=7, eps_shift=11),
    ),
    "stream-otf-31x8-spread": (
        "stream",
        PerturbConfig(n_rngs=31, rng_bits=8, lfsr_bit_order="spread", perturb_dim=20, eps_shift=9),
    ),
    "stream-otf-32x14-leap5-spread": (
        "stream",
        PerturbConfig(n_rngs=32, rng_bits=14, lfsr_leap=5, lfsr_bit_order="spread", perturb_dim=7, eps_shift=11),
    ),
    "stream-pregen": ("stream", PerturbConfig(strategy="pregen", perturb_dim=1000)),
    "stream-gaussian": ("stream", PerturbConfig(strategy="gaussian", lanes=8, eps_shift=14)),
}
CYCLES = 12_000


@pytest.mark.rtl
@pytest.mark.parametrize("simulator", SIMULATORS)
@pytest.mark.parametrize("case", CASES)
def test_rtl_matches_golden(case, simulator, require_simulator, sim_build):
    require_simulator(simulator)
    bench, config = CASES[case]
    result = run_bench(bench, config, simulator, sim_build / case / simulator, CYCLES, seed=7)
    assert result["cycles"] == CYCLES and result["comparisons"] >= CYCLES - 10
    if bench == "urng" and config.rewind:
        assert result["saves"] >= 2 and result["rewinds"] >= 2
    if bench == "pool":
        assert result["rewinds"] >= 100 and result["perturbations"] >= 100
    if bench == "stream":
        assert result["next"] >= 60 and result["rewind"] >= 60 and result["valid"] >= CYCLES // 2
        if config.strategy == "otf":
            assert len(result["shifts"]) >= 2  # the scale LUT's k changes between perturbations
    if bench == "gaussian":
        stats = result["statistics"]  # every RTL sample, each sequence position once (rewinds excluded)
        assert stats["samples"] >= 100_000 and stats["passed"], stats
    print(f"{case} on {simulator}: {result['cycles_per_s']:.0f} cycles/s")


@pytest.mark.rtl
def test_scoreboard_catches_a_wrong_model(simulators, require_simulator, sim_build):
    """The testbench must fail when golden and RTL differ (here: golden told a different seed)."""
    simulator = "verilator" if "verilator" in simulators else "icarus"
    require_simulator(simulator)
    bench, config = CASES["urng-32x14"]
    build = sim_build / "urng-32x14" / simulator
    with pytest.raises(AssertionError, match="cocotb test"):
        run_bench(bench, config, simulator, build, 100, expect_config=config.replace(seed=2))
    assert "port lanes" in (build / "test.log").read_text()
