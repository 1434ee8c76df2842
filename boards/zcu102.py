"""The ZCU102 (Zynq UltraScale+ xczu9eg-ffvb1156-2-e): Amaranth platform, board top-level, build plan.

Pins, each checked against a public ZCU102 XDC:

* ``clk125`` G21 (P) / F21 (N), LVDS_25, 125 MHz — alexforencich/verilog-ethernet
  ``example/ZCU102/fpga/fpga.xdc`` ("System clocks / 125 MHz", ``clk_125mhz_p/n``); also
  ielecer/Xilinx_ZCU102_Evaluation_Kit ``runLed/runLed.srcs/constrs_1/new/runLed.xdc``.
* ``led`` 0..7 AG14 AF13 AE13 AJ14 AJ15 AH13 AH14 AL12, LVCMOS33 (SLEW SLOW, DRIVE 8) — Forencich's
  XDC ("LEDs", ``led[0..7]``); AG14 and AF13 also in ielecer's runLed.xdc.
* ``rst`` AM13, LVCMOS33, the CPU_RESET push button — Forencich's XDC ("Reset button", port
  ``reset``). Polarity: his ``fpga.v`` feeds ``reset`` straight into an MMCME4 ``RST`` (active high),
  although its header comment says "active low"; we follow the code: active high. Unconfirmed against
  the board schematic (UG1182), so the top also resets from the PS (``pl_resetn0``) and a user can
  tie the button off with ``ZCU102Top(use_reset_button=False)``.

The board top runs everything from the 125 MHz oscillator: it clocks the host (``pezo.hw.host``) and
the PS's HPM0 FPD AXI port through the block design of ``pezo.boards.ps_block_design`` (an AXI4 -> AXI4-Lite
converter), so the PS drives the register file at 0xA000_0000. The LEDs show the host's ``leds``
(BUSY, VALID, DONE, SIGN, STEP[3:0]); LED 7 is replaced by a ~1 Hz heartbeat.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from amaranth.build import Attrs, Clock, DiffPairs, Pins, Resource
from amaranth.hdl import ClockDomain, ClockSignal, Elaboratable, Instance, Module, Signal
from amaranth.lib import io
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.vendor import XilinxPlatform

from pezo.boards.ps_block_design import (
    DEFAULT_AXIL_PORT,
    DEFAULT_CLOCK_PORT,
    DEFAULT_RESET_PORT,
    ps_block_design_tcl,
    ps_wrapper_ports,
)
from pezo.golden.config import PerturbConfig
from pezo.golden.regs.header import stream_header
from pezo.golden.regs.spec import register_dicts
from pezo.golden.regs.stream import addr_width, register_map
from pezo.hw.host import StreamHost

PART = "xczu9eg-ffvb1156-2-e"
CLOCK_HZ = 125_000_000
LED_PINS = ("AG14", "AF13", "AE13", "AJ14", "AJ15", "AH13", "AH14", "AL12")
CLOCK_PINS = ("G21", "F21")
RESET_PIN = "AM13"
PIN_SOURCES = {
    "clk125": "alexforencich/verilog-ethernet example/ZCU102/fpga/fpga.xdc; ielecer/Xilinx_ZCU102_Evaluation_Kit "
    "runLed/runLed.srcs/constrs_1/new/runLed.xdc",
    "led": "alexforencich/verilog-ethernet example/ZCU102/fpga/fpga.xdc (all 8); ielecer runLed.xdc (AG14, AF13)",
    "rst": "alexforencich/verilog-ethernet example/ZCU102/fpga/fpga.xdc ('Reset button'); polarity from its fpga.v",
}


class ZCU102Platform(XilinxPlatform):
    """Xilinx ZCU102 evaluation board (xczu9eg-ffvb1156-2-e), Vivado toolchain."""

    device = "xczu9eg"
    package = "ffvb1156"
    speed = "2-e"
    default_clk = "clk125"
    default_rst = "rst"
    resources = [
        Resource(
            "clk125", 0, DiffPairs(CLOCK_PINS[0], CLOCK_PINS[1], dir="i"), Clock(CLOCK_HZ), Attrs(IOSTANDARD="LVDS_25")
        ),
        Resource("rst", 0, Pins(RESET_PIN, dir="i"), Attrs(IOSTANDARD="LVCMOS33")),
        *[
            Resource("led", i, Pins(pin, dir="o"), Attrs(IOSTANDARD="LVCMOS33", SLEW="SLOW", DRIVE="8"))
            for i, pin in enumerate(LED_PINS)
        ],
    ]
    connectors = []

    def prepare(self, elaboratable, name="top", **kwargs):
        """Amaranth's build plan without ``<name>.debug.v`` when it holds only Amaranth's "Debug Verilog
        generation was disabled" (no ``debug_verilog`` override): nothing reads it, and the file looked broken."""
        plan = super().prepare(elaboratable, name, **kwargs)
        debug = f"{name}.debug.v"
        if "Debug Verilog generation was disabled" in str(plan.files.get(debug, "")):
            del plan.files[debug]
        return plan


def clock_and_reset(m: Module, platform, use_reset_button: bool) -> Signal:
    """The board tops' clock and reset: 125 MHz oscillator -> BUFG -> ``sync``; ``sync``'s reset = the button
    (``use_reset_button``) or the returned PS reset (``ps_resetn``, active low, for the block design to
    drive) low, through a ``ResetSynchronizer``."""
    m.submodules.clk_buf = clk = io.Buffer("i", platform.request("clk125", 0, dir="-"))
    m.domains.sync = ClockDomain("sync")
    m.submodules.clk_bufg = Instance("BUFG", i_I=clk.i, o_O=ClockSignal("sync"))
    ps_resetn = Signal()
    button = 0
    if use_reset_button:
        m.submodules.rst_buf = rst = io.Buffer("i", platform.request("rst", 0, dir="-"))
        button = rst.i
    m.submodules.reset_sync = ResetSynchronizer(button | ~ps_resetn, domain="sync")
    return ps_resetn


def drive_leds(m: Module, platform, leds) -> None:
    """LEDs 0..6 show ``leds[0..6]``; LED 7 a ~1 Hz heartbeat of ``sync``."""
    heartbeat = Signal(27)
    m.d.sync += heartbeat.eq(heartbeat + 1)
    for i in range(8):
        m.submodules[f"led_buf_{i}"] = led = io.Buffer("o", platform.request("led", i, dir="-"))
        m.d.comb += led.o.eq(heartbeat[-1] if i == 7 else leds[i])


class ZCU102Top(Elaboratable):
    """The board top-level (an Amaranth elaboratable for ``ZCU102Platform``): 125 MHz oscillator ->
    BUFG -> ``sync``; reset = button (optional) or PS ``aresetn`` low, synchronised; the PS block design
    wrapper (black box, created by the Tcl) masters ``pezo.hw.host.StreamHost(config)``; LEDs."""

    def __init__(self, config: PerturbConfig, *, use_reset_button: bool = True):
        self.config = config
        self.use_reset_button = use_reset_button
        self.host = StreamHost(config)

    def elaborate(self, platform):
        m = Module()
        ps_resetn = clock_and_reset(m, platform, self.use_reset_button)
        m.submodules.host = host = self.host
        wrapper = ps_wrapper(addr_width(self.config))
        ports = {}
        for port in wrapper.ports:
            if port.name == DEFAULT_CLOCK_PORT:
                ports[port.instance_key] = ClockSignal("sync")
            elif port.name == DEFAULT_RESET_PORT:
                ports[port.instance_key] = ps_resetn
            else:  # M_AXIL_<signal>: the AXI4-Lite master port of the block design
                signal = getattr(host.s_axil, port.name.removeprefix(DEFAULT_AXIL_PORT + "_"))
                assert len(signal) == port.width, port
                ports[port.instance_key] = signal
        m.submodules.ps = Instance(wrapper.module, **ports)
        drive_leds(m, platform, host.leds)
        return m


BOARDS = ("zcu102",)
SAIF_FILE = "top.saif"
PS_BASE_ADDRESS = 0xA000_0000


def registers_header(config: PerturbConfig) -> str:
    """The C header of the stream host's map (``golden.regs.header.stream_header``) at ``PS_BASE_ADDRESS``, for
    software on the PS (e.g. mmap of /dev/mem)."""
    return stream_header(config, PS_BASE_ADDRESS)


def ps_wrapper(host_addr_width: int):
    """The PS block design's wrapper ports for a host window of ``2^host_addr_width`` bytes."""
    return ps_wrapper_ports(addr_width=host_addr_width)


def build_plan(config: PerturbConfig, *, saif: bool = False, use_reset_button: bool = True):
    """Amaranth's Vivado build plan (``top.v``, ``top.xdc``, ``top.tcl``, ``build_top.sh``) with the PS
    block design created after ``read_xdc`` and, with ``saif``, ``read_saif`` of ``top.saif`` before
    ``report_power``."""
    width = addr_width(config)
    overrides = {
        "script_after_read": ps_block_design_tcl(
            clock_hz=CLOCK_HZ, base_address=PS_BASE_ADDRESS, addr_width=width, range_bytes=1 << width
        )
    }
    if saif:
        # the SAIF's top instance is the testbench's; below it the design hierarchy from ``top`` down
        overrides["script_after_route"] = f"read_saif -strip_path pezo_power_tb/dut {SAIF_FILE}"
    platform = ZCU102Platform()
    return platform.build(ZCU102Top(config, use_reset_button=use_reset_button), name="top", do_build=False, **overrides)


def write_design(config: PerturbConfig, directory: Path, *, saif: Path | None = None) -> list[str]:
    """Write the ZCU102 design of ``config`` into ``directory``; return the file names written."""
    directory = Path(directory)
    build_plan(config, saif=saif is not None).extract(directory)
    (directory / "config.json").write_text(
        json.dumps(
            {
                "board": "zcu102",
                "part": PART,
                "clock_hz": CLOCK_HZ,
                "config": config.to_dict(),
                "axi_base_address": PS_BASE_ADDRESS,
                "registers": register_dicts(register_map(config)),
                "pins": {"clk125": list(CLOCK_PINS), "rst": RESET_PIN, "led": list(LED_PINS)},
                "pin_sources": PIN_SOURCES,
            },
            indent=2,
        )
        + "\n"
    )
    (directory / "pezo_regs.h").write_text(registers_header(config))
    if saif is not None:
        shutil.copyfile(saif, directory / SAIF_FILE)
    return sorted(p.name for p in directory.iterdir())
