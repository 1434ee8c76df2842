"""The ZCU102 design of the engine top (``pezo build --design engine``): the Zynq PS drives
``pezo.hw.engine_top.EngineTop`` -- registers over AXI4-Lite at ``REGS_BASE``, the weight / batch / logit /
step-log windows over AXI4 (64-bit bursts) right after them, ``irq`` on ``pl_ps_irq0`` -- through the
block design of ``pezo.boards.engine_block_design``. Clock, reset and LEDs as the stream design
(``pezo.boards.zcu102``); the LEDs show BUSY, DONE, LOAD_READY, ERROR, IRQ, STEPS_DONE[1:0] and a heartbeat.

``write_engine_design`` writes ``top.v``, ``top.xdc``, ``top.tcl``, ``build_top.sh``, ``config.json`` (the
map with physical addresses: what ``python -m pezo.driver`` reads on the board), ``pezo_regs.h`` and
``pezo_example.c`` (a minimal C program: mmap, identity, one TRAIN step of a zero batch).
"""

from __future__ import annotations

import json
from pathlib import Path

from amaranth.hdl import ClockDomain, ClockSignal, Elaboratable, Instance, Module, Signal
from amaranth.lib import io
from amaranth.lib.cdc import ResetSynchronizer

from pezo.boards.engine_block_design import (default_windows_base, engine_block_design_tcl,
                                             engine_wrapper_ports)
from pezo.boards.zcu102 import CLOCK_HZ, CLOCK_PINS, LED_PINS, PART, PIN_SOURCES, RESET_PIN, ZCU102Platform
from pezo.golden.board_map import BoardMap
from pezo.golden.engine.network import NetConfig
from pezo.hw.engine_top import ID_BITS, EngineTop

REGS_BASE = 0xA000_0000


class ZCU102EngineTop(Elaboratable):
    """125 MHz oscillator -> BUFG -> ``sync``; reset = button (optional) or PS ``aresetn`` low,
    synchronised; the block design's wrapper masters ``EngineTop(config)`` on both AXI ports and takes
    its ``irq``; LEDs."""

    def __init__(self, config: NetConfig, *, use_reset_button: bool = True):
        self.map = BoardMap(config)
        self.config = config
        self.use_reset_button = use_reset_button
        self.engine = EngineTop(config)

    def elaborate(self, platform):
        m = Module()
        m.submodules.clk_buf = clk = io.Buffer("i", platform.request("clk125", 0, dir="-"))
        m.domains.sync = ClockDomain("sync")
        m.submodules.clk_bufg = Instance("BUFG", i_I=clk.i, o_O=ClockSignal("sync"))
        ps_resetn = Signal()
        button = 0
        if self.use_reset_button:
            m.submodules.rst_buf = rst = io.Buffer("i", platform.request("rst", 0, dir="-"))
            button = rst.i
        m.submodules.reset_sync = ResetSynchronizer(button | ~ps_resetn, domain="sync")
        m.submodules.engine = engine = self.engine
        ports = {}
        for port in engine_wrapper_ports(self.map.addr_width, ID_BITS):
            if port.role == "clock":
                ports[port.instance_key] = ClockSignal("sync")
            elif port.role == "resetn":
                ports[port.instance_key] = ps_resetn
            elif port.role == "irq":
                ports[port.instance_key] = engine.irq
            else:
                bus, signal = port.role.split(".")
                target = getattr(engine.s_axil if bus == "axil" else engine.s_axi, signal)
                assert len(target) == port.width, (port, len(target))
                ports[port.instance_key] = target
        m.submodules.ps = Instance(engine_wrapper_ports(self.map.addr_width, ID_BITS).module, **ports)
        heartbeat = Signal(27)
        m.d.sync += heartbeat.eq(heartbeat + 1)
        for i in range(8):
            m.submodules[f"led_buf_{i}"] = led = io.Buffer("o", platform.request("led", i, dir="-"))
            m.d.comb += led.o.eq(heartbeat[-1] if i == 7 else engine.leds[i])
        return m


def addresses(config: NetConfig) -> dict:
    """Physical addresses of the two AXI ports on the PS."""
    bmap = BoardMap(config)
    return {"regs_base": REGS_BASE, "regs_size": 4096, "windows_base": default_windows_base(bmap.addr_width, REGS_BASE),
            "windows_size": 1 << bmap.addr_width}


def engine_build_plan(config: NetConfig, *, use_reset_button: bool = True):
    """Amaranth's Vivado build plan of the engine design (the block design made after ``read_xdc``)."""
    bmap, where = BoardMap(config), addresses(config)
    tcl = engine_block_design_tcl(bmap.addr_width, ID_BITS, where["regs_base"], where["windows_base"], CLOCK_HZ)
    return ZCU102Platform().build(ZCU102EngineTop(config, use_reset_button=use_reset_button), name="top",
                                  do_build=False, script_after_read=tcl)


def engine_header(config: NetConfig) -> str:
    """``pezo_regs.h`` of the engine design: the map (``BoardMap.c_header``) plus the physical bases."""
    where = addresses(config)
    text = BoardMap(config).c_header()
    bases = (f"#define PEZO_REGS_BASE    0x{where['regs_base']:08X}u  /* AXI4-Lite registers (HPM0 FPD) */\n"
             f"#define PEZO_WINDOWS_BASE 0x{where['windows_base']:08X}u  /* AXI4 windows, "
             f"0x{where['windows_size']:X} bytes */\n"
             f"#define PEZO_WINDOWS_SIZE 0x{where['windows_size']:X}u\n"
             "#define PEZO_IRQ          121   /* pl_ps_irq0[0]: GIC SPI 89 */\n\n")
    return text.replace("/* AXI4-Lite registers:", bases + "/* AXI4-Lite registers:", 1)


EXAMPLE_C = r"""/* Minimal bare-metal/Linux example for the pezo engine top (generated by pezo build --design engine).
 * Linux: gcc -O2 -o pezo_example pezo_example.c && sudo ./pezo_example
 * It maps the registers and windows through /dev/mem, checks the identity, queues one all-zero batch
 * (labels 0), runs one TRAIN step and prints the step's losses and g. Training jobs: python -m pezo.driver. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "pezo_regs.h"

static volatile uint32_t *regs;
static volatile uint64_t *win;

static uint32_t rd(uint32_t off) { return regs[off / 4]; }
static void wr(uint32_t off, uint32_t v) { regs[off / 4] = v; }

int main(void)
{
    int fd = open("/dev/mem", O_RDWR | O_SYNC);
    if (fd < 0) { perror("/dev/mem"); return 1; }
    regs = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, PEZO_REGS_BASE);
    win = mmap(NULL, PEZO_WINDOWS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, PEZO_WINDOWS_BASE);
    if (regs == MAP_FAILED || win == MAP_FAILED) { perror("mmap"); return 1; }
    if (rd(PEZO_REG_ID) != PEZO_ID || rd(PEZO_REG_VERSION) != PEZO_ENGINE_MAP_VERSION) {
        fprintf(stderr, "not a pezo engine top (ID %08x)\n", rd(PEZO_REG_ID));
        return 1;
    }
    for (uint32_t b = 0; b < PEZO_BATCH; b++) {          /* x: 64-bit stores, in address order */
        for (uint32_t k = 0; k < PEZO_INPUTS; k += 8)
            win[(PEZO_WIN_X + b * PEZO_X_STRIDE + k) / 8] = 0;
        win[PEZO_WIN_LABELS / 8 + b] = 0;
    }
    wr(PEZO_REG_CONTROL, PEZO_CONTROL_PUSH);
    wr(PEZO_REG_OP, PEZO_OP_TRAIN);
    wr(PEZO_REG_STEPS, 1);
    wr(PEZO_REG_G_MODE, 1);                               /* sign */
    wr(PEZO_REG_MARGIN, 4096);
    wr(PEZO_REG_G_LR, 1u << 16);
    wr(PEZO_REG_CONTROL, PEZO_CONTROL_START | PEZO_CONTROL_ACK_DONE | PEZO_CONTROL_ACK_STEP);
    while (!(rd(PEZO_REG_STATUS) & PEZO_STATUS_DONE))
        ;
    uint64_t lp = win[PEZO_WIN_STEPS / 8], lm = win[PEZO_WIN_STEPS / 8 + 1];
    int64_t g = (int64_t)win[PEZO_WIN_STEPS / 8 + 2];
    printf("step 0: L+ %llu L- %llu g %lld, %u cycles\n", (unsigned long long)lp, (unsigned long long)lm,
           (long long)g, rd(PEZO_REG_CYCLES));
    return 0;
}
"""


def engine_config_json(config: NetConfig) -> dict:
    bmap = BoardMap(config)
    return {"board": "zcu102", "design": "engine", "part": PART, "clock_hz": CLOCK_HZ, **addresses(config),
            "irq": {"line": "pl_ps_irq0[0]", "gic_spi": 89, "linux_irq": 121}, "map": bmap.to_dict(),
            "pins": {"clk125": list(CLOCK_PINS), "rst": RESET_PIN, "led": list(LED_PINS)}, "pin_sources": PIN_SOURCES}


def write_engine_design(config: NetConfig, directory: Path) -> list[str]:
    """Write the ZCU102 engine design of ``config`` into ``directory``; return the file names written."""
    directory = Path(directory)
    engine_build_plan(config).extract(directory)
    (directory / "config.json").write_text(json.dumps(engine_config_json(config), indent=2) + "\n")
    (directory / "pezo_regs.h").write_text(engine_header(config))
    (directory / "pezo_example.c").write_text(EXAMPLE_C)
    return sorted(p.name for p in directory.iterdir())
