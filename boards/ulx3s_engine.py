"""The whole trainer on the ULX3S 85F (``pezo build --board ulx3s-85f --design engine``): ``hw.uart_top.UartEngineTop``
-- the engine top of the ZCU102 design behind the UARTBone bridge, with the on-chip data memory and feeder -- on
the board's 25 MHz oscillator (no PLL: the design's Fmax is far above it), its FTDI USB-serial pins (``uart`` 0 of
amaranth-boards' ``ULX3S_85F_Platform``: rx M1, tx L4) and LEDs, built to ``top.bit`` with PyPI tools only
(``boards.ulx3s.run_flow``). The PWR button resets.

``config.json`` beside the bitstream holds what ``python -m pezo.driver --design DIR --uart PORT`` needs: the
map, the baud rate, the link's regions and the data memory's capacity.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from amaranth.hdl import Elaboratable, Module
from amaranth.lib import io

from pezo.boards.ulx3s import BOARD, CLOCK_HZ, run_flow
from pezo.golden.engine.network import NetConfig
from pezo.golden.regs.engine import BoardMap
from pezo.golden.regs.uart_link import REGIONS, region_base
from pezo.hw.uart_top import UartEngineTop, check_capacity

DEFAULT_BAUD = 115_200
DEFAULT_CAPACITY = 2048
"""Examples the data memory holds by default: the 1 797 digits fit (64 inputs: 64 DP16KD)."""
BAUD_TOLERANCE = 0.02
ECP5_EBR = 208
"""DP16KD block RAMs of the LFE5U-85F."""
EBR_BYTES = 2048
"""Bytes of a 64-bit, byte-written memory one DP16KD holds (1 024 x 16 of its 1 024 x 18: Yosys' mapping; the
digits-mlp data memory of 2 048 x 64 bytes is 64 DP16KD)."""
ENGINE_OTHER_EBR = 32
"""DP16KD of the engine top's memories besides its two batch banks, an upper bound: Yosys ``synth_ecp5`` (its memory
mapping) counted 14 for digits-cnn at batch 16 and 32, 21 at batch 128; the digits-mlp trainer build 30 at batch 128."""
ECP5_CELLS = {"LUT4": "TRELLIS_COMB", "FF": "TRELLIS_FF", "EBR": "DP16KD", "MULT18": "MULT18X18D", "IO": "TRELLIS_IO"}


def divisor_for(baud: int, clock_hz: int = CLOCK_HZ) -> int:
    """Clock cycles per bit for ``baud`` (one ValueError when the rounded rate is off by more than 2 %)."""
    if not isinstance(baud, int) or baud <= 0:
        raise ValueError(f"baud must be a positive integer, got {baud!r}")
    divisor = round(clock_hz / baud)
    if not 4 <= divisor <= 1 << 16 or abs(clock_hz / divisor - baud) > BAUD_TOLERANCE * baud:
        raise ValueError(
            f"baud must be in {clock_hz // 65536 + 1}..{clock_hz // 4} and within 2 % of {clock_hz} / an "
            f"integer (e.g. 115200, 230400, 460800, 1000000), got {baud}"
        )
    return divisor


def trainer_ebr(config: NetConfig, capacity: int) -> dict:
    """DP16KD estimate of the trainer of ``config`` with a data memory of ``capacity`` examples: ``data_memory`` (x
    at ``BoardMap.x_stride`` bytes per example -- a conv layer 0's patches -- and the labels), ``batch_banks`` (the
    engine's two banks of ``NetConfig.input_words`` words per example), ``engine_other`` (``ENGINE_OTHER_EBR``),
    ``total`` and ``available`` (``ECP5_EBR``)."""
    array = config.array
    data = -(-capacity * BoardMap(config).x_stride // EBR_BYTES) + -(-capacity // EBR_BYTES)
    banks = -(-2 * array.tiles * config.input_words * array.rows * array.cols // EBR_BYTES)
    total = data + banks + ENGINE_OTHER_EBR
    return {
        "data_memory": data,
        "batch_banks": banks,
        "engine_other": ENGINE_OTHER_EBR,
        "total": total,
        "available": ECP5_EBR,
    }


def largest_capacity(config: NetConfig) -> int | None:
    """The largest data memory (a power of two ``check_capacity`` takes) whose trainer fits ``ECP5_EBR``; None if
    none does."""
    capacity, best = max(config.array.batch, 8), None
    while capacity <= 1 << 15 and trainer_ebr(config, capacity)["total"] <= ECP5_EBR:
        best, capacity = capacity, 2 * capacity
    return best


class ULX3SEngineTop(Elaboratable):
    """``UartEngineTop(config, divisor_for(baud), capacity)`` on the board's pins (module docstring)."""

    def __init__(self, config: NetConfig, baud: int = DEFAULT_BAUD, capacity: int = DEFAULT_CAPACITY):
        self.top = UartEngineTop(config, divisor_for(baud), capacity)

    def elaborate(self, platform):
        m = Module()
        m.submodules.trainer = top = self.top
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = tx = io.Buffer("o", uart.tx)
        m.d.comb += [top.rx.eq(rx.i), tx.o.eq(top.tx)]
        for i in range(8):
            m.submodules[f"led{i}"] = led = io.Buffer("o", platform.request("led", i, dir="-"))
            m.d.comb += led.o.eq(top.leds[i])
        return m


def ecp5_utilisation(log: str) -> dict:
    """Cells used per kind (``ECP5_CELLS``) from nextpnr-ecp5's "Device utilisation" report (the last one)."""
    start = log.rfind("Device utilisation:")
    text = log[start:] if start >= 0 else ""
    out = {}
    for key, cell in ECP5_CELLS.items():
        found = re.search(rf"\b{cell}:\s+(\d+)/\s*(\d+)", text)
        if found:
            out[key] = int(found.group(1))
            out[f"{key}_available"] = int(found.group(2))
    return out


def engine_design_json(config: NetConfig, baud: int, capacity: int) -> dict:
    """``config.json`` of the ULX3S engine design (what the driver reads)."""
    bmap = BoardMap(config)
    return {
        "board": BOARD,
        "design": "engine",
        "device": "LFE5U-85F-6BG381",
        "clock_hz": CLOCK_HZ,
        "link": "uart",
        "baud": baud,
        "divisor": divisor_for(baud),
        "regs_base": region_base("registers"),
        "windows_base": region_base("windows"),
        "windows_size": 1 << bmap.addr_width,
        "regions": {name: region_base(name) for name in REGIONS},
        "capacity": capacity,
        "map": bmap.to_dict(),
        "pins": {"clk25": "G2", "uart_rx": "M1", "uart_tx": "L4", "reset": "D6 (PWR button)"},
        "pin_sources": "amaranth-boards ULX3S_85F_Platform",
    }


def build_engine_bitstream(
    config: NetConfig, directory: Path, baud: int = DEFAULT_BAUD, capacity: int = DEFAULT_CAPACITY
) -> dict:
    """Build the ULX3S trainer of ``config`` in ``directory``: returns ``bitstream``, ``bytes``, ``fmax_mhz``,
    ``clock_mhz``, ``meets_clock``, ``critical_path``, ``resources`` (``ecp5_utilisation``), ``files``."""
    directory = Path(directory)
    check_capacity(capacity, config)
    meta = engine_design_json(config, baud, capacity)
    timing = run_flow(ULX3SEngineTop(config, baud, capacity), directory)
    resources = ecp5_utilisation((directory / "top.tim").read_text())
    bitstream = directory / "top.bit"
    meta.update(
        fmax_mhz=timing["fmax_mhz"], resources=resources, bitstream=bitstream.name, bytes=bitstream.stat().st_size
    )
    (directory / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
    return {
        "board": BOARD,
        "design": "engine",
        "bitstream": str(bitstream),
        "bytes": bitstream.stat().st_size,
        "fmax_mhz": timing["fmax_mhz"],
        "clock_mhz": CLOCK_HZ / 1e6,
        "meets_clock": timing["fmax_mhz"] >= CLOCK_HZ / 1e6,
        "critical_path": timing["critical_path"],
        "resources": resources,
        "files": sorted(p.name for p in directory.iterdir()),
    }
