"""On the board: ``python -m pezo.driver --design DIR [--steps N] [--uio /dev/uioN] [--json]`` runs the
training job of ``pezo sim board`` on the engine top through ``/dev/mem`` (``pezo.driver.mmap_bus``):
DIR is what ``pezo build --design engine`` wrote (its ``config.json`` gives the map and the physical
addresses). The job: the trainer's data and initial weights (``golden.zo.int8_net``, seed ``--seed``),
N steps of TRAIN with double-buffered batches, then the trained weights; golden runs the same steps on
the CPU and ``match`` says whether every step's losses, g, logits and the final weights are equal.
Needs root (or a /dev/mem with access) and the bitstream loaded (e.g. ``fpgautil -b top.bit``).

The ULX3S (``pezo build --board ulx3s-85f --design engine``): ``--uart /dev/ttyUSB0`` talks UARTBone at the
design's baud rate (``pezo.driver.uart_bus``, pyserial), loads the training split into the on-chip data memory
once and runs one TRAIN of N steps the feeder supplies (``pezo.driver.on_chip``); golden runs the same batches.

Your own model: ``--net PATH`` (the network file or ONNX model the design was built from; its weights and
biases are the start) and ``--data PATH`` (``.npz`` / ``.csv``; an ONNX model is calibrated on it);
``--save DIR`` writes the trained weights read back from the board as ``DIR/<name>.json`` (network file) and
``DIR/<name>.onnx`` (QDQ, ``pezo.golden.engine.onnx_export``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import numpy as np

from pezo.driver.engine import BusError, EngineDriver
from pezo.driver.mmap_bus import MmapBus
from pezo.driver.uart_bus import SerialLink, UartBus
from pezo.golden.engine.network import NetConfig, NetEngine
from pezo.golden.regs.engine import BoardMap
from pezo.golden.zo.run import NetRun, design_train_config


def prepare(config: NetConfig, seed: int, g_mode: str = "sign", net=None, data=None, split=None, bp_bits=None):
    """The ``NetRun`` (``golden.zo.run``) of the trainer's job on the design ``config``: the training config of the
    design (``design_train_config``: a preset net, or the network file / ONNX model ``net`` with the data file
    ``data``; ``split`` / ``bp_bits`` the elastic trainer's partition on a design built with ``--backprop``), its
    data, start weights and biases."""
    return NetRun.prepare(design_train_config(config, seed, g_mode, net, data, split, bp_bits))


async def run(driver: EngineDriver, xs, ys, flat, loss, biases=None) -> dict:
    await driver.check_identity()
    model = NetEngine(driver.config, flat, biases)
    await driver.load_weights(model.flat)
    if biases is not None:
        await driver.load_biases(model.biases)
    started = time.perf_counter()
    result = await driver.train(xs, ys, loss)
    seconds = time.perf_counter() - started
    final = await driver.read_weights()
    bad = []
    for k, (x, y, got) in enumerate(zip(xs, ys, result.steps)):
        want = model.train_step(x, y, loss)
        if (got.loss_plus, got.loss_minus, got.g) != (want.loss_plus, want.loss_minus, want.g):
            bad.append(
                f"step {k}: losses/g {got.loss_plus, got.loss_minus, got.g} != golden "
                f"{want.loss_plus, want.loss_minus, want.g}"
            )
        elif got.logits_intact and not (
            (want.logits_plus is None or np.array_equal(got.logits[0], want.logits_plus))
            and np.array_equal(got.logits[1], want.logits_minus)
        ):
            bad.append(f"step {k}: logits differ from golden")
    if not np.array_equal(final, model.flat):
        bad.append("final weights differ from golden")
    return {
        "match": not bad,
        "mismatches": bad[:10],
        "steps": len(xs),
        "seconds_per_step": seconds / len(xs),
        "engine_cycles_per_step": result.engine_cycles / len(xs),
        "cycle_bound": driver.config.step_cycle_bound(loss.split),
        "loss_first": [result.steps[0].loss_plus, result.steps[0].loss_minus],
        "loss_last": [result.steps[-1].loss_plus, result.steps[-1].loss_minus],
        "design": "engine",
        "final_weights": final,
    }


async def run_on_chip(driver: EngineDriver, xs, ys, flat, loss, steps: int, biases=None) -> dict:
    """The ULX3S job: load the training set into the data memory once, TRAIN ``steps`` steps the feeder supplies,
    compare the step log (its last records) and the final weights with golden on the same batches."""
    from pezo.driver.on_chip import OnChipTrainer, golden_order

    await driver.check_identity()
    model = NetEngine(driver.config, flat, biases)
    trainer = OnChipTrainer(driver)
    started = time.perf_counter()
    await driver.load_weights(model.flat)
    if biases is not None:
        await driver.load_biases(model.biases)
    await trainer.load(xs, ys)
    loaded = time.perf_counter()
    result = await trainer.train(steps, loss)
    seconds = time.perf_counter() - loaded
    final = await driver.read_weights()
    bx, by = golden_order(xs, ys, 0, driver.config.array.batch, steps)
    bad = []
    for k in range(steps):
        want = model.train_step(bx[k], by[k], loss)
        if k >= result.first_step:
            got = result.steps[k - result.first_step]
            if (got.loss_plus, got.loss_minus, got.g) != (want.loss_plus, want.loss_minus, want.g):
                bad.append(f"step {k}: losses/g {got.loss_plus, got.loss_minus, got.g} != golden")
    if not np.array_equal(final, model.flat):
        bad.append("final weights differ from golden")
    return {
        "match": not bad,
        "mismatches": bad[:10],
        "steps": steps,
        "examples": len(xs),
        "load_seconds": loaded - started,
        "seconds_per_step": seconds / steps,
        "steps_per_second": steps / seconds,
        "engine_cycles_per_step": result.engine_cycles / steps,
        "wait_cycles": result.wait_cycles,
        "cycle_bound": driver.config.cycle_bound(),
        "loss_first": [result.steps[0].loss_plus, result.steps[0].loss_minus],
        "loss_last": [result.steps[-1].loss_plus, result.steps[-1].loss_minus],
        "design": "engine",
        "link": "uart",
        "final_weights": final,
    }


def save_trained(folder: Path, config: NetConfig, final, run: NetRun) -> list[str]:
    """``--save``: the trained weights as ``<name>.json`` and ``<name>.onnx`` in ``folder`` (a new or empty
    directory), with ``run``'s network file, biases and input exponent."""
    from dataclasses import replace

    from pezo.golden.engine.net_file import load_net, write_net_file
    from pezo.golden.engine.onnx_export import write_onnx

    base = load_net(run.train.net)
    engine = NetEngine(config, final, run.biases)
    biases = tuple(b if l.bias else None for l, b in zip(config.layers, engine.biases))
    net = replace(base, weights=tuple(engine.weights), biases=biases, input_exponent=run.act_exponent)
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"{net.name}.json", f"{net.name}.onnx"]
    write_net_file(net, folder / names[0])
    write_onnx(net, folder / names[1])
    return [str(folder / n) for n in names]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m pezo.driver", description=__doc__.split("\n\n")[0])
    p.add_argument("--design", type=Path, required=True, help="the directory pezo build --design engine wrote")
    p.add_argument("--steps", type=int, default=100, help="ZO steps, 1..65535 (default 100)")
    p.add_argument("--seed", type=int, default=1, help="data split, initial weights and batch order (default 1)")
    p.add_argument("--mem", default="/dev/mem", help="the memory device (default /dev/mem)")
    p.add_argument("--uio", help="a UIO device of the engine's interrupt (default: poll STATUS)")
    p.add_argument(
        "--uart",
        metavar="PORT",
        help="the ULX3S trainer's USB-serial port (e.g. /dev/ttyUSB0; pezo build --board ulx3s-85f --design "
        "engine): load the training set into the on-chip data memory, then train from it",
    )
    p.add_argument("--net", help="the network file or ONNX model the design was built from (default: its preset)")
    p.add_argument("--data", help="a labelled data set (.npz or .csv) for --net")
    p.add_argument("--save", type=Path, help="write the trained weights as DIR/<name>.json and DIR/<name>.onnx")
    p.add_argument(
        "--split",
        help="the elastic trainer's partition: full-zo (default), cls2, cls1, full-bp or a layer index (a design "
        "built with --backprop)",
    )
    p.add_argument("--bp-bits", type=int, help="the backprop tail's update bits, 1..7 (default: the split's)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    try:
        described = json.loads((args.design / "config.json").read_text())
        if described.get("design") != "engine":
            raise ValueError(f"{args.design}/config.json is not an engine design (pezo build --design engine)")
        config = NetConfig.from_dict(described["map"]["config"])
        if not 1 <= args.steps < 1 << 16:
            raise ValueError(f"--steps must be in 1..65535, got {args.steps}")
        if args.save is not None and args.save.exists() and any(args.save.iterdir()):
            raise ValueError(f"--save {args.save} is not empty: name a new directory")
        if args.uart is None and described.get("link") == "uart":
            raise ValueError(f"{args.design} is a ULX3S design: give its serial port, --uart /dev/ttyUSB0")
        tail = {"net": args.net, "data": args.data, "split": args.split, "bp_bits": args.bp_bits}
        if args.uart is not None:
            if described.get("link") != "uart":
                raise ValueError(f"--uart needs a ULX3S design (pezo build --board ulx3s-85f); {args.design} is not")
            job = prepare(config, args.seed, **tail)
            xs, ys = job.examples(described["capacity"])
            bus = UartBus(SerialLink(args.uart, described["baud"]))
        else:
            job = prepare(config, args.seed, **tail)
            xs, ys = job.batches(args.steps)
            bus = MmapBus(
                args.mem, described["regs_base"], described["windows_base"], described["windows_size"], uio=args.uio
            )
    except (OSError, ValueError, KeyError) as exc:
        print(f"pezo.driver: error: {exc}", file=sys.stderr)
        return 2
    driver = EngineDriver(bus, BoardMap(config))
    try:
        if args.uart is not None:
            result = asyncio.run(run_on_chip(driver, xs, ys, job.flat_weights, job.loss, args.steps, job.biases))
        else:
            result = asyncio.run(run(driver, xs, ys, job.flat_weights, job.loss, job.biases))
    except (BusError, TimeoutError) as exc:
        print(f"pezo.driver: {exc}", file=sys.stderr)
        return 1
    finally:
        (bus.link if args.uart is not None else bus).close()
    final = result.pop("final_weights")
    if args.save is not None:
        result["saved"] = save_trained(args.save, config, final, job)
    print(
        json.dumps(result, indent=2)
        if args.json
        else f"{'MATCH' if result['match'] else 'MISMATCH'} over {result['steps']} steps; "
        f"{1e3 * result['seconds_per_step']:.3f} ms/step; loss {result['loss_first']} -> {result['loss_last']}"
    )
    return 0 if result["match"] else 1


if __name__ == "__main__":
    sys.exit(main())
