"""cocotb: the generated Verilog of the URNG array against golden, on Icarus and on Verilator.

Every lane and the pointer are compared every cycle for >= 10 000 cycles, with rewinds mid-run.
"""

import json

import pytest

from golden.config import PerturbConfig
from hw.urng import URNGArray
from sim.runner import SIMULATORS, run_cocotb, write_verilog

from conftest import SIM_BUILD

CONFIGS = {
    "32x14": PerturbConfig(n_rngs=32, rng_bits=14),
    "31x8-rewind": PerturbConfig(n_rngs=31, rng_bits=8, seed=77, rewind=True),
    "3x32-rewind": PerturbConfig(n_rngs=3, rng_bits=32, seed=0x89ABCDEF, rewind=True),
}
TOP = "pezo_urng_array"


@pytest.mark.rtl
@pytest.mark.parametrize("simulator", SIMULATORS)
@pytest.mark.parametrize("name", CONFIGS)
def test_urng_cocotb(name, simulator, require_simulator):
    require_simulator(simulator)
    config = CONFIGS[name]
    build = SIM_BUILD / "urng" / name / simulator
    verilog = write_verilog(URNGArray(config), TOP, build.parent, config)
    result_file = build / "result.json"
    build.mkdir(parents=True, exist_ok=True)
    result_file.unlink(missing_ok=True)
    run_cocotb(verilog_path=verilog, toplevel=TOP, test_module="sim.urng_tb", simulator=simulator,
               build_dir=build, extra_env={"PEZO_CONFIG": json.dumps(config.to_dict()),
                                           "PEZO_CYCLES": "12000", "PEZO_STIM_SEED": "7",
                                           "PEZO_RESULT": str(result_file)})
    result = json.loads(result_file.read_text())
    assert result["cycles"] == 12000 and result["comparisons"] == 2 * 12000
    if config.rewind:
        assert result["saves"] >= 2 and result["rewinds"] >= 2
    print(f"{name} on {simulator}: {result['cycles_per_s']:.0f} cycles/s")


@pytest.mark.rtl
def test_scoreboard_catches_a_wrong_model(simulators, require_simulator):
    """The testbench must fail when golden and RTL differ (here: golden told a different seed)."""
    simulator = "verilator" if "verilator" in simulators else "icarus"
    require_simulator(simulator)
    config = CONFIGS["32x14"]
    build = SIM_BUILD / "urng" / "32x14" / simulator
    verilog = write_verilog(URNGArray(config), TOP, build.parent, config)
    wrong = config.replace(seed=2)
    with pytest.raises(AssertionError, match="cocotb test"):
        run_cocotb(verilog_path=verilog, toplevel=TOP, test_module="sim.urng_tb", simulator=simulator,
                   build_dir=build, extra_env={"PEZO_CONFIG": json.dumps(wrong.to_dict()),
                                               "PEZO_CYCLES": "100"})
    assert "port lanes" in (build / "test.log").read_text()
