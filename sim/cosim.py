"""One co-simulation entry: ``cosimulate(run, target, simulator, steps, ...) -> dict``.

A ``golden.zo.run.NetRun`` (the config, its data, start weights and biases) is trained ``steps`` ZO steps on the RTL of
one target and compared, every value, with golden:

* ``engine`` -- the network engine (``hw.engine.net_engine.NetEngine``, with its backprop tail for a split C < L), the
  cocotb testbench as the host (``pezo sim engine --net``);
* ``board``  -- the engine top behind AXI (``hw.engine_top.EngineTop``) with the host driver over cocotbext-axi
  (``pezo sim board``);
* ``uart``   -- the ULX3S trainer top (``hw.uart_top.UartEngineTop``) with the driver over its UART pins, Verilator
  only (``pezo sim uart``).

This module owns the build directories (``cache_dir()/<target dir>/<net>-...-<hash of the NetConfig>/<simulator>``,
one per design, so a rerun reuses the simulator build) and the JSON object of each command (its keys and their order
are the CLI's contract). ``cosimulate_head`` is the head engine's (``pezo sim engine`` without ``--net``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pezo.golden.config import cache_dir
from pezo.golden.engine.backprop import split_name
from pezo.sim import runner

TARGETS = ("engine", "board", "uart")


def design_hash(text: str) -> str:
    """The 12 hex digits a build directory is named by."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def design_dir(kind: str, net) -> Path:
    """The directory of one network design's co-simulations (its simulators' builds below it)."""
    return cache_dir() / kind / f"{net.name}-{net.stream.strategy}-{design_hash(net.to_json())}"


def _tail_keys(run, net) -> dict:
    train, layers = run.train, len(run.train.layers)
    return {
        "split_seed": train.seed,
        "split": split_name(train.split_c, layers),
        "split_c": train.split_c,
        "bp_bits": run.loss.bp_bits if train.split_c < layers else None,
    }


def _engine(run, steps: int, simulator: str, overlap: bool = True) -> dict:
    train, net, loss = run.train, run.rtl_config, run.loss
    build, (xs, ys) = design_dir("sim-net-engine", net), run.batches(steps)
    host_g = None if loss.on_chip else {"train": train.to_dict(), "act_exponent": run.act_exponent}
    r = runner.run_net_engine(
        net, loss, xs, ys, run.flat_weights, simulator, build / simulator, biases=run.biases, overlap=overlap,
        host_g=host_g,
    )  # fmt: skip
    bound = net.step_cycle_bound(train.split_c)
    records, tail = r["records"], _tail_keys(run, net)
    return {
        "match": r["match"],
        "steps": r["steps"],
        "cycles_per_step": r["cycles_per_step"],
        "cycle_bound": bound,
        "cycle_ratio": r["cycles_per_step"] / bound,
        "mac_utilisation": net.useful_mac_cycles() / r["cycles_per_step"],
        "load_hidden": bool(r["load_hidden"]),
        "simulator": simulator,
        "net": net.name,
        "loss": train.loss,
        "strategy": net.stream.strategy,
        "busy_cycles_per_step": r["busy_cycles_per_step"],
        "busy_cycle_ratio": r["busy_cycles_per_step"] / bound,
        "wait_cycles": r["wait_cycles"],
        "overlap": overlap,
        "layer_utilisation": net.layer_utilisation(),
        "mismatches": r["mismatches"],
        "mismatch_count": r["mismatch_count"],
        "loss_first": records[0] if records else None,
        "loss_last": records[-1] if records else None,
        "final_weights_nonzero": r["final_weights_nonzero"],
        "final_weight_range": r["final_weight_range"],
        "final_weights_digest": r.get("final_weight_digest"),
        "array": f"{net.array.rows}x{net.array.cols}",
        "batch": net.array.batch,
        "weights": net.weights,
        "layers": [l.describe() for l in net.layers],
        "build_s": r.get("build_s"),
        "test_s": r.get("test_s"),
        "seed": train.seed,
        **tail,
        "bp_cycles": r.get("bp_cycles_per_step"),
        "bp_cycle_bound": net.bp_cycle_bound(train.split_c) if train.split_c < len(train.layers) else 0,
        "config": train.to_dict(),
    }


def _board(run, steps: int, simulator: str) -> dict:
    train, net, loss = run.train, run.rtl_config, run.loss
    build, (xs, ys) = design_dir("sim-board", net), run.batches(steps)
    r = runner.run_board(net, loss, xs, ys, run.flat_weights, simulator, build / simulator, biases=run.biases)
    bound = net.step_cycle_bound(train.split_c)
    return {
        "match": r["match"],
        "steps": r["steps"],
        "cycles_per_step": r["cycles_per_step"],
        "bus_cycles_per_step": r["bus_cycles_per_step"],
        "cycle_bound": bound,
        "cycle_ratio": r["cycles_per_step"] / bound,
        "engine_cycles_per_step": r["engine_cycles_per_step"],
        "wait_cycles": r["wait_cycles"],
        "simulator": simulator,
        "design": "engine",
        "net": net.name,
        "strategy": net.stream.strategy,
        "array": f"{net.array.rows}x{net.array.cols}",
        "batch": net.array.batch,
        "loss": train.loss,
        "g_mode": train.g_mode,
        "logit_steps_checked": r["logit_steps_checked"],
        "slverr": r["slverr"],
        "queue": r["queue"],
        "protocol": r["protocol"],
        "use_irq": r["use_irq"],
        "mismatches": r["mismatches"],
        "mismatch_count": r["mismatch_count"],
        "loss_first": r["records"][0] if r["records"] else None,
        "loss_last": r["records"][-1] if r["records"] else None,
        "bus_transfers": r["bus_transfers"],
        "build_s": r.get("build_s"),
        "test_s": r.get("test_s"),
        **_tail_keys(run, net),
    }


def _uart(
    run, steps: int, simulator: str, examples: int, start: int = 0, divisor: int = 8, host_fed_steps: int = 0,
    clock_hz: float = 25e6,
) -> dict:  # fmt: skip
    if simulator != "verilator":
        raise ValueError(f"the uart target runs on verilator only, got simulator {simulator!r}")
    train, net, loss = run.train, run.net, run.loss
    build = cache_dir() / "sim-uart" / f"{net.name}-{design_hash(net.to_json())}-d{divisor}" / "verilator"
    xs, ys = run.examples(examples)
    r = runner.run_uart_board(
        net, loss, xs, ys, run.flat_weights, steps, build, divisor=divisor, start=start, host_fed_steps=host_fed_steps
    )
    bound = r["cycle_bound"]
    return {
        "match": r["match"],
        "steps": r["steps"],
        "engine_cycles_per_step": r["engine_cycles_per_step"],
        "cycle_bound": bound,
        "cycle_ratio": r["engine_cycles_per_step"] / bound,
        "wait_cycles": r["wait_cycles"],
        "steps_per_second_25mhz": clock_hz / r["engine_cycles_per_step"],
        "job_steps_per_second_25mhz": clock_hz * r["steps"] / r["train_cycles"],
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
        "baud_at_25mhz": clock_hz / divisor,
        "split_seed": train.seed,
        "build_s": r.get("build_s"),
        "test_s": r.get("test_s"),
    }


@dataclass(frozen=True)
class CosimTarget:
    """One target of ``cosimulate``: what it simulates and its result's builder."""

    design: str
    simulate: Callable[..., dict]


COSIM_TARGETS = {
    "engine": CosimTarget("the network engine, the testbench as host", _engine),
    "board": CosimTarget("the engine top through AXI with the host driver", _board),
    "uart": CosimTarget("the ULX3S trainer top over its UART with the host driver", _uart),
}


def cosimulate(run, target: str, simulator: str, steps: int, **options) -> dict:
    """Co-simulate ``steps`` ZO steps of ``run`` (a ``NetRun``) on ``target`` (``TARGETS``) with ``simulator``;
    the command's JSON object (``match`` first). ``options``: engine ``overlap`` (default True); uart ``examples``
    (required: the on-chip training set), ``start``, ``divisor``, ``host_fed_steps``, ``clock_hz`` (the board's
    clock for the steps-per-second keys). ValueError for an unknown target or a batch larger than the data."""
    if target not in COSIM_TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    return COSIM_TARGETS[target].simulate(run, steps, simulator, **options)


def cosimulate_head(train, steps: int, simulator: str, task) -> dict:
    """``steps`` real ZO steps of the head engine (``train``: an ``Int8TrainConfig``, ``task`` its ``Int8Task``)
    on ``simulator``; the JSON object of ``pezo sim engine`` without ``--net``."""
    from pezo.golden.zo.int8_head import batch_schedule

    engine = train.engine
    schedule = batch_schedule(len(task.y["train"]), engine.array.batch, steps, train.seed)
    name = design_hash(json.dumps(engine.to_dict(), sort_keys=True))
    build = cache_dir() / "sim-engine" / f"{engine.stream.strategy}-{name}" / simulator
    r = runner.run_engine(
        train, task.x["train"][schedule], task.y["train"][schedule], task.act_exponent, simulator, Path(build)
    )
    bound = engine.cycle_bound()
    return {
        "match": r["match"],
        "steps": r["steps"],
        "cycles_per_step": r["cycles_per_step"],
        "cycle_bound": bound,
        "simulator": simulator,
        "strategy": engine.stream.strategy,
        "cycle_ratio": r["cycles_per_step"] / bound,
        "mac_utilisation": engine.useful_mac_cycles() / r["cycles_per_step"],
        "forward_cycles": r["forward_cycles"][-1],
        "update_cycles": r["update_cycles"][-1],
        "cycles_per_step_max": r["cycles_per_step_max"],
        "weights_match": r["weights_match"],
        "mismatches": r["mismatches"],
        "final_weights_nonzero": r["final_weights_nonzero"],
        "final_weight_range": r["final_weight_range"],
        "loss_first": sum(r["losses"][0]) / 2,
        "loss_last": sum(r["losses"][-1]) / 2,
        "array": f"{engine.array.rows}x{engine.array.cols}",
        "macs": engine.array.macs,
        "weights": engine.weights,
        "task": train.task,
        "shots": train.shots,
        "seed": train.seed,
        "split_seed": train.seed,
        "act_exponent": task.act_exponent,
        "build_s": r.get("build_s"),
        "test_s": r.get("test_s"),
        "config": {**train.to_dict(), "engine": engine.to_dict()},
    }
