"""The driver's third transport: the ULX3S trainer's UART (UARTBone frames, ``golden.regs.uart_link``), with the async
methods ``pezo.driver.engine`` expects. The frames go over a ``link`` with ``async write(data: bytes)`` and
``async read(n) -> bytes``: ``SerialLink`` (pyserial, the board's FTDI port) or the co-simulation's
``pezo.sim.uart_link.CocotbUartLink``.

* Registers: one 32-bit word, region 0 (the engine top's AXI4-Lite offsets).
* Windows: incrementing frames of up to 254 words (whole 64-bit beats; the bridge writes a beat's two halves at
  once), region 1 (the AXI4 offsets).
* The link has no error answer: every access returns OKAY; the feeder's LINK_ERRORS register counts the
  accesses the engine top answered SLVERR (``link_errors``).
"""

from __future__ import annotations

import time

from pezo.golden.regs.spec import RESP_OKAY
from pezo.golden.regs.uart_link import (
    bytes_to_words,
    decode_answer,
    encode_read,
    encode_write,
    feeder_register,
    region_base,
    words_to_bytes,
)

FRAME_WORDS = 254
"""Words per frame (even: a frame never splits a 64-bit beat)."""


class UartBus:
    """The engine top behind the UART ``link`` (module docstring); ``sent`` / ``received`` count the bytes."""

    irq = False

    def __init__(self, link, clock=None):
        self.link = link
        self.clock = clock or time.perf_counter
        self.sent = self.received = 0

    def now(self):
        return self.clock()

    # -- frames at absolute addresses ------------------------------------------------------------
    async def write_words(self, address: int, words) -> None:
        words = list(words)
        for i in range(0, len(words), FRAME_WORDS):
            frame = encode_write(address + 4 * i, words[i : i + FRAME_WORDS])
            self.sent += len(frame)
            await self.link.write(frame)

    async def read_words(self, address: int, count: int) -> list[int]:
        out = []
        for i in range(0, count, FRAME_WORDS):
            n = min(FRAME_WORDS, count - i)
            frame = encode_read(address + 4 * i, n)
            self.sent += len(frame)
            await self.link.write(frame)
            answer = await self.link.read(4 * n)
            self.received += len(answer)
            out += decode_answer(answer, n)
        return out

    async def link_errors(self) -> int:
        """Accesses the engine top answered SLVERR since the last FEED_CONTROL.CLEAR_ERRORS."""
        return (await self.read_words(feeder_register("LINK_ERRORS"), 1))[0]

    # -- the driver's bus (pezo.driver.engine) -----------------------------------------------------
    async def read32(self, addr: int) -> tuple[int, int]:
        return (await self.read_words(region_base("registers") + addr, 1))[0], RESP_OKAY

    async def write32(self, addr: int, value: int) -> int:
        await self.write_words(region_base("registers") + addr, [value & 0xFFFFFFFF])
        return RESP_OKAY

    async def write_burst(self, addr: int, data: bytes) -> int:
        if addr % 8:
            raise ValueError(f"addr must be 8-byte aligned, got {addr:#x}")
        await self.write_words(region_base("windows") + addr, bytes_to_words(data))
        return RESP_OKAY

    async def read_burst(self, addr: int, n: int) -> tuple[bytes, int]:
        if addr % 8:
            raise ValueError(f"addr must be 8-byte aligned, got {addr:#x}")
        words = await self.read_words(region_base("windows") + addr, -(-n // 4))
        return words_to_bytes(words)[:n], RESP_OKAY


class SerialLink:
    """The board's USB-serial port through pyserial (``pip install 'pezo[uart]'``); ``timeout`` seconds per read."""

    def __init__(self, port: str, baud: int, timeout: float = 2.0):
        try:
            import serial
        except ImportError:
            raise ValueError("--uart needs pyserial: pip install 'pezo[uart]' (or pip install pyserial)") from None
        self.port = serial.serial_for_url(port, baud, timeout=timeout)  # a device, or a URL such as loop://

    async def write(self, data: bytes) -> None:
        self.port.write(data)

    async def read(self, n: int) -> bytes:
        data = self.port.read(n)
        if len(data) != n:
            raise TimeoutError(f"the board answered {len(data)} of {n} bytes (bitstream loaded? baud right?)")
        return data

    def close(self) -> None:
        self.port.close()
