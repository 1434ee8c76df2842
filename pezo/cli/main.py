"""The ``pezo`` command line: build, report, power, verilog, simulate, train, sweep, sim engine, train-int8.

Bad input and OS errors (a path that cannot be written, ...) -> one line ``pezo: error: ...`` naming
the parameter and its range, exit status 2, nothing written; values longer than 120 characters are cut.
Failures of external tools -> one line, exit status 1.

One module per command family, each with ``add_parsers(subparsers)`` and its ``cmd_*`` functions:
``hardware`` (build, power, verilog, simulate; it registers ``report`` from ``report``, both taking the
generator options from ``generator``), ``explore`` (the design-space explorer), ``training`` (train, sweep; the seed
methods of ``--method`` / ``--methods`` in ``methods``), ``sim`` (sim engine, sim board, sim uart: the
co-simulations), ``engine`` (train-int8; the engines' options), ``board`` (the engine designs of build and report),
``netfile``
(net show / import / export). They share
``args`` (the user error, parser and argument types) and ``output`` (staged output directories);
this module only assembles the parser and turns exceptions into exit statuses.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings

from pezo.cli import engine, explore, hardware, netfile, quality, sim, training
from pezo.cli.args import CLIError, Parser
from pezo.cli.output import OutputDirError
from pezo.executor import catch_interrupts, raise_if_interrupted
from pezo.golden.lm.data import TaskDataMissing


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pezo")
    except PackageNotFoundError:
        return "unknown (not installed)"


LONG_VALUE = re.compile(r"\S{121,}")


def one_line(message: str) -> str:
    """The message on one line, every value longer than 120 characters cut to its start and length."""
    message = " ".join(str(message).split())
    return LONG_VALUE.sub(lambda m: f"{m.group()[:60]}...({len(m.group())} characters)", message)


def quiet_unbuilt_designs() -> None:
    """After an interrupt or a failure, Amaranth designs that were built but never elaborated would each warn
    (``UnusedElaboratable``) when collected at exit, under the one-line message: ignore those warnings (as
    Amaranth itself does for an uncaught exception)."""
    unused = sys.modules.get("amaranth._unused")
    if unused is not None:
        warnings.filterwarnings("ignore", category=unused.UnusedMustUse)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="pezo",
        description="pezo: FPGA perturbation engines for zeroth-order on-device "
        "training (PeZO) - golden model, Amaranth RTL, cocotb proofs, resource reports.",
    )
    parser.add_argument("--version", action="version", version=f"pezo {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    hardware.add_parsers(sub)
    training.add_parsers(sub)
    sim.add_parsers(sub)  # 'sim engine', 'sim board', 'sim uart'
    engine.add_parsers(sub)  # 'train-int8', after 'sim'
    quality.add_parsers(sub)
    explore.add_parsers(sub)
    netfile.add_parsers(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    try:
        with catch_interrupts():
            args = parser.parse_args(argv)
            status = args.func(args)
            raise_if_interrupted()  # a Ctrl-C whose KeyboardInterrupt a finaliser swallowed
            return status
    except (CLIError, OutputDirError) as exc:
        print(f"pezo: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        quiet_unbuilt_designs()
        print("pezo: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # tool failures: one line, not a traceback
        quiet_unbuilt_designs()
        # boards.flow.synth (Amaranth) and lm.minilm (SciPy) cost 0.1-0.2 s to import: only when something failed
        from pezo.boards.flow.synth import SynthesisError
        from pezo.golden.lm.minilm import ModelPackageMissing

        if isinstance(exc, (ModelPackageMissing, TaskDataMissing)):
            print(f"pezo: error: {one_line(exc)}", file=sys.stderr)
            return 2
        if isinstance(exc, OSError):  # a path the user gave (permissions, full disk, ...): one line
            where = f" {exc.filename!r}" if exc.filename else ""
            print(f"pezo: error: {one_line(exc.strerror or exc)}{where}", file=sys.stderr)
            return 2
        if isinstance(exc, (SynthesisError, AssertionError, RuntimeError)):
            print(f"pezo: {type(exc).__name__}: {one_line(exc)}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
