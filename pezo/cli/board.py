"""The engine designs of ``pezo build --design engine`` (the ZCU102 trainer's Vivado project files, the ULX3S
trainer's bitstream) and ``pezo report --unit board`` (the engine top's resources)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from pezo.cli.args import CLIError, option_error, raw
from pezo.cli.net import add_net_path_args

DESIGNS = ("stream", "engine")
ENGINE_BUILD_OPTIONS = ("n_rngs", "pool_bits", "lanes", "banks", "perturb_dim", "saif", "rewind")
"""Options of the stream design that an engine build does not take."""
STREAM_BUILD_OPTIONS = ("net", "data", "batch", "rows", "cols", "backprop", "baud", "examples")
ULX3S_BOARD = "ulx3s-85f"


def add_build_args(p: argparse.ArgumentParser) -> None:
    """``pezo build``'s design options (the engine top)."""
    p.add_argument(
        "--design",
        choices=DESIGNS,
        default="stream",
        help="stream (the perturbation stream behind "
        "AXI4-Lite, default) or engine (the network engine behind AXI4-Lite + AXI4 windows + irq: the "
        "on-device trainer)",
    )
    add_net_path_args(
        p, "with --design engine: the network, a built-in name, a network file or an ONNX model (default digits-mlp)"
    )
    p.add_argument("--batch", type=raw, help="with --design engine: examples per step (default: the trainer's 128)")
    p.add_argument("--rows", type=raw, help="with --design engine: R (default 8)")
    p.add_argument("--cols", type=raw, help="with --design engine: C, a power of two >= 8 (default 8)")
    p.add_argument(
        "--backprop",
        action="store_true",
        help="with --design engine: generate the backprop tail (the elastic trainer: SPLIT and BP_BITS "
        "registers, python -m pezo.driver --split; rows must equal cols)",
    )
    p.add_argument(
        "--baud", type=raw, help="with --design engine --board ulx3s-85f: the UART's baud rate (default 115200)"
    )
    p.add_argument(
        "--examples",
        type=raw,
        help="with --design engine --board ulx3s-85f: examples the on-chip data memory holds, a power of two "
        "(default 2048: the 1 797 digits)",
    )


def check_build_design(args) -> None:
    """One error for an option that does not apply to the chosen design."""
    given = lambda name: getattr(args, name, None) not in (None, False)  # noqa: E731
    if args.design not in DESIGNS:
        raise CLIError(f"--design must be one of {', '.join(DESIGNS)}, got {args.design!r}")
    wrong = [n for n in (ENGINE_BUILD_OPTIONS if args.design == "engine" else STREAM_BUILD_OPTIONS) if given(n)]
    if wrong:
        raise CLIError(f"--{wrong[0].replace('_', '-')} does not apply to --design {args.design}")


def engine_build_config(args):
    """The ``NetConfig`` of ``pezo build --design engine`` (the trainer's net at its tuned settings)."""
    from pezo.cli.net import check_hardware_data, check_stream_options, net_file_defaults, resolve_net, train_config
    from pezo.golden.regs.engine import check_board_config

    if args.board not in ("zcu102", ULX3S_BOARD):
        raise CLIError(f"--design engine is built for --board zcu102 or {ULX3S_BOARD}, got {args.board!r}")
    check_hardware_data(args)
    if args.strategy not in (None, "otf", "pregen"):
        raise CLIError(f"--strategy must be otf or pregen with --design engine, got {args.strategy!r}")
    net = resolve_net(args) or "digits-mlp"
    fields = {"net": net, "strategy": args.strategy or "otf", **net_file_defaults(net)}
    for field, value in (
        ("data", args.data),
        ("rows", args.rows),
        ("cols", args.cols),
        ("batch", args.batch),
        ("eps_shift", args.eps_shift),
        ("stream_seed", args.seed),
        ("rng_bits", args.rng_bits),
        ("pool_size", args.pool_size),
    ):
        if value is not None:
            fields[field] = value
    check_stream_options(fields["strategy"], {"rng_bits": args.rng_bits, "pool_size": args.pool_size})
    net = train_config(fields, {"stream_seed": "--seed"}).net_config
    try:
        if getattr(args, "backprop", False):
            net = net.replace(backprop=True)
        check_board_config(net)
    except ValueError as exc:
        raise CLIError(f"--{exc}") from None
    return net


def uart_trainer_capacity(net, examples: int | None) -> int:
    """The ULX3S trainer's data memory in examples: ``--examples`` or ``DEFAULT_CAPACITY``. A conv layer 0's
    examples are its im2col'd patches (``BoardMap.x_bytes``, loaded once by the host), so for such a net the default
    is the largest data memory that fits the ECP5's block RAM (``boards.ulx3s_engine.trainer_ebr``), and a given one
    that does not fit, or a batch at which none does, is one error with the numbers."""
    from pezo.boards.ulx3s_engine import DEFAULT_CAPACITY, largest_capacity, trainer_ebr
    from pezo.golden.regs.engine import BoardMap

    if net.layers[0].kind != "conv":
        return DEFAULT_CAPACITY if examples is None else examples
    largest = largest_capacity(net)
    per_example = f"its im2col'd patches ({BoardMap(net).x_bytes} bytes per example, not {net.inputs})"
    if largest is None:
        low = max(net.array.batch, 8)
        smallest = trainer_ebr(net, low)
        batch, rows = net.array.batch // 2, net.array.rows  # the largest halved batch that fits, if any
        while batch >= rows and (batch % rows or largest_capacity(_with_batch(net, batch)) is None):
            batch //= 2
        hint = f"--batch {batch} fits {largest_capacity(_with_batch(net, batch))} examples" if batch >= rows else ""
        raise CLIError(
            f"--net {net.name}: layer 0 is a convolution, so the {ULX3S_BOARD} trainer's data memory holds "
            f"{per_example}; at batch {net.array.batch} the engine's batch banks take {smallest['batch_banks']} DP16KD "
            f"and with the smallest data memory ({low} examples, {smallest['data_memory']}) the trainer needs about "
            f"{smallest['total']} of the ECP5-85F's {smallest['available']}{': ' + hint if hint else ''}"
        )
    if examples is None:
        return largest
    need = trainer_ebr(net, examples)
    if need["total"] > need["available"]:
        raise CLIError(
            f"--examples {examples}: --net {net.name}'s data memory holds {per_example}, {need['data_memory']} "
            f"DP16KD for {examples} examples, and the trainer would need about {need['total']} of the ECP5-85F's "
            f"{need['available']}: at most {largest} examples fit at batch {net.array.batch}"
        )
    return examples


def _with_batch(net, batch: int):
    """``net`` at another batch size."""
    import dataclasses

    return net.replace(array=dataclasses.replace(net.array, batch=batch))


def run_vivado(vivado: str, out: Path) -> dict:
    """Run ``build_top.sh`` (Vivado at ``vivado``) in the committed build directory ``out``; its files join pezo's
    manifest (``--force`` may replace them later); the run's utilisation (``boards.flow.vivado.read_vivado_run``).
    RuntimeError when Vivado fails."""
    from pezo.boards.flow.vivado import read_vivado_run
    from pezo.cli.output import record_output

    print(f"running Vivado ({vivado}) in {out}; log: {out}/top.log ...", file=sys.stderr)
    try:
        proc = subprocess.run(
            ["bash", "build_top.sh"], cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
    finally:  # pezo ran it, so what it wrote is pezo's
        record_output(out)
    if proc.returncode != 0:
        raise RuntimeError(f"Vivado failed (exit {proc.returncode}); see {out}/top.log")
    return read_vivado_run(out)


def cmd_build_engine(args, out_default: Path) -> int:
    """Write the ZCU102 engine design (``pezo.boards.zcu102_engine``); Vivado as the stream design (``pezo build``'s
    ``BUILD_TARGETS``)."""
    from pezo.boards.zcu102_engine import addresses, write_engine_design
    from pezo.cli.output import staged_output

    net = engine_build_config(args)  # pezo build checked --design's options (check_build_design)
    for option in ("baud", "examples"):
        if getattr(args, option, None) is not None:
            raise CLIError(f"--{option} applies to --board {ULX3S_BOARD} only (the UART trainer)")
    out = args.out or out_default / f"zcu102-engine-{net.name}-{net.stream.strategy}"
    with staged_output(
        out, args.force, {"command": "build", "design": "engine", "config": net.to_dict()}, strict=True
    ) as staging:
        files = write_engine_design(net, staging.path)
    where = addresses(net)
    print(f"{'replaced' if staging.replacing else 'wrote'} {out}/: {', '.join(files)}")
    print(
        f"engine top of {net.name} ({net.array.rows}x{net.array.cols}, batch {net.array.batch}, "
        f"{net.stream.strategy}): registers at "
        f"{where['regs_base']:#x}, windows at {where['windows_base']:#x} ({where['windows_size']:#x} bytes), "
        "irq on pl_ps_irq0"
    )
    vivado = shutil.which("vivado")
    if vivado is not None and not args.no_vivado:
        result = run_vivado(vivado, out)
        print(f"{result['tool']}: {result['LUT']} LUT, {result['FF']} FF, {result['BRAM']} BRAM, {result['DSP']} DSP")
    print(
        "next: Vivado (2021.1 or later) writes the bitstream, then on the board (PYNQ/PetaLinux, root):\n"
        f"  cd {out} && bash build_top.sh\n"
        f"  scp -r {out} root@zcu102:design   # with top.bit and a pezo checkout (pip install -e . --no-deps)\n"
        "  fpgautil -b design/top.bit          # or: echo top.bit > /sys/class/fpga_manager/fpga0/firmware\n"
        "  python3 -m pezo.driver --design design --steps 100 --json"
    )
    return 0


def cmd_build_ulx3s_engine(args, net, out_default: Path) -> int:
    """The ULX3S trainer (``pezo.boards.ulx3s_engine``) to a bitstream with PyPI tools; what a user runs next."""
    from pezo.boards.ulx3s_engine import DEFAULT_BAUD, DEFAULT_CAPACITY, build_engine_bitstream, divisor_for
    from pezo.cli.output import staged_output
    from pezo.hw.uart_top import check_capacity

    for option, given in (("--saif", args.saif is not None), ("--no-vivado", args.no_vivado)):
        if given:
            raise CLIError(f"{option} does not apply to --board {ULX3S_BOARD} (an open-flow bitstream, no Vivado)")
    baud = DEFAULT_BAUD if args.baud is None else args.baud
    try:
        divisor_for(baud)
    except ValueError as exc:
        raise CLIError(f"--{exc}") from None
    try:
        check_capacity(DEFAULT_CAPACITY if args.examples is None else args.examples, net)
    except ValueError as exc:
        raise CLIError(f"--examples: {exc}") from None
    capacity = uart_trainer_capacity(net, args.examples)
    out = args.out or out_default / f"{ULX3S_BOARD}-engine-{net.name}-{net.stream.strategy}"
    with staged_output(
        out,
        args.force,
        {"command": "build", "board": ULX3S_BOARD, "design": "engine", "config": net.to_dict()},
        strict=True,
    ) as staging:
        print(
            f"building the {ULX3S_BOARD} trainer bitstream: Yosys, nextpnr-ecp5, ecppack (~30 min, 2 busy cores) ...",
            file=sys.stderr,
        )
        result = build_engine_bitstream(net, staging.path, baud, capacity)
    res = result["resources"]
    print(f"{'replaced' if staging.replacing else 'wrote'} {out}/: {', '.join(result['files'])}")
    print(
        f"bitstream: {out / 'top.bit'} ({result['bytes']} bytes); Fmax {result['fmax_mhz']:.1f} MHz against the "
        f"board's {result['clock_mhz']:.0f} MHz clock ({'meets' if result['meets_clock'] else 'FAILS'} it)"
    )
    print(
        f"{net.name} ({net.array.rows}x{net.array.cols}, batch {net.array.batch}, {net.stream.strategy}), UART "
        f"{baud} baud, data memory {capacity} examples: "
        + ", ".join(f"{res[k]} {k}" for k in ("LUT4", "FF", "EBR", "MULT18") if k in res)
    )
    print(
        "next, with the board on USB:\n"
        f"  openFPGALoader -b ulx3s '{out / 'top.bit'}'\n"
        f"  python -m pezo.driver --design '{out}' --uart /dev/ttyUSB0 --steps 1000 --json"
    )
    return 0 if result["meets_clock"] else 1


def cmd_report_board(args, strategy: str) -> int:
    """``pezo report --strategy engine-S --unit board [--net N]``: Yosys resources of the engine top of the
    network engine that ``pezo report --strategy engine-S --net N`` synthesises (same ``NetConfig``, so the
    AXI overhead is the difference; default net digits-mlp)."""
    from pezo.boards.flow.report import RESOURCE_KEYS, board_report
    from pezo.cli.net import resolve_net
    from pezo.cli.timing import print_timing, timing_keys
    from pezo.golden.engine.net_file import net_file_config
    from pezo.golden.regs.engine import check_board_config

    fields = {
        f: getattr(args, f)
        for f in ("seed", "eps_shift", "rng_bits", "pool_size", "pool_bits")
        if getattr(args, f, None) is not None
    }
    for field, only in (("rng_bits", "otf"), ("pool_size", "pregen"), ("pool_bits", "pregen")):
        if field in fields and strategy != only:
            raise CLIError(f"--{field.replace('_', '-')} applies to --strategy engine-{only} only")
    try:
        net = net_file_config(resolve_net(args) or "digits-mlp", strategy=strategy, **fields)
    except ValueError as exc:
        raise option_error(exc, tuple(fields), fields) from None
    try:
        check_board_config(net)
    except ValueError as exc:
        raise option_error(exc, tuple(fields), fields) from None
    print("synthesizing the engine top with Yosys (first run takes a few minutes) ...", file=sys.stderr)
    result = board_report(net, use_cache=not args.no_cache)
    result.update(timing_keys(net, "board", result["LUT"], args))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"engine top of {net.name} ({', '.join(result['layers'])}), {net.array.rows}x{net.array.cols}, "
        f"batch {net.array.batch}, "
        f"{net.stream.strategy} - {result['tool']}"
    )
    for key in RESOURCE_KEYS:
        extra = (
            f"   (engine alone {result['engine_only'][key]}, AXI {result['axi_overhead'][key]:+d})"
            if "engine_only" in result and key in result["engine_only"]
            else ""
        )
        print(f"  {key:<7}{result[key]:>8}{extra}")
    print_timing(result, args)
    return 0
