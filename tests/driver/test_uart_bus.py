"""The UART transport (``pezo.driver.uart_bus``) against a Python stand-in for the bridge (``golden.regs.uart_link``'s
frames on a word-addressed memory) -- NOT the RTL (``tests/sim/test_uart_board.py`` runs that): the frames, their
regions and splits, the driver's byte layouts through it; ``python -m pezo.driver --uart`` on a loopback port."""

from __future__ import annotations

import asyncio
import json

import numpy as np

from pezo.driver.engine import EngineDriver
from pezo.driver.uart_bus import FRAME_WORDS, UartBus
from pezo.golden.engine.nets import net_config
from pezo.golden.regs.engine import BoardMap
from pezo.golden.regs.uart_link import CMD_READ, CMD_WRITE, decode_frame, region_base

CONFIG = net_config("digits-mlp", batch=16)


class FakeBridge:
    """Parses each written frame; serves reads from ``memory`` (32-bit words by byte address)."""

    def __init__(self):
        self.memory, self.frames, self.answer = {}, [], b""

    async def write(self, data: bytes) -> None:
        cmd, address, words, rest = decode_frame(bytes(data))
        assert rest == b""
        self.frames.append((cmd, address, len(words) if cmd == CMD_WRITE else data[1]))
        if cmd == CMD_WRITE:
            for i, w in enumerate(words):
                self.memory[address + 4 * i] = w
        else:
            self.answer += b"".join(self.memory.get(address + 4 * i, 0).to_bytes(4, "big") for i in range(data[1]))

    async def read(self, n: int) -> bytes:
        out, self.answer = self.answer[:n], self.answer[n:]
        return out


def test_windows_go_out_in_frames_of_whole_beats():
    link = FakeBridge()
    bus = UartBus(link)
    data = bytes(range(256)) * 9  # 2 304 bytes: 576 words
    asyncio.run(bus.write_burst(0x40, data))
    base = region_base("windows") + 0x40
    assert link.frames == [
        (CMD_WRITE, base, FRAME_WORDS),
        (CMD_WRITE, base + 4 * FRAME_WORDS, FRAME_WORDS),
        (CMD_WRITE, base + 8 * FRAME_WORDS, 576 - 2 * FRAME_WORDS),
    ]
    assert FRAME_WORDS % 2 == 0  # a frame ends on a beat boundary
    got, resp = asyncio.run(bus.read_burst(0x40, len(data) - 3))
    assert got == data[:-3] and resp == 0
    assert bus.sent == 3 * 6 + len(data) + 3 * 6 and bus.received == len(data)


def test_registers_are_words_of_region_zero():
    link = FakeBridge()
    bus = UartBus(link)
    asyncio.run(bus.write32(0x1C, 0xDEADBEEF))
    assert link.frames == [(CMD_WRITE, 0x1C, 1)]
    assert asyncio.run(bus.read32(0x1C)) == (0xDEADBEEF, 0)
    assert link.frames[-1] == (CMD_READ, 0x1C, 1)


def test_the_driver_round_trips_weights_through_the_transport():
    bus = UartBus(FakeBridge())
    driver = EngineDriver(bus, BoardMap(CONFIG))
    flat = np.random.default_rng(1).integers(-128, 128, size=CONFIG.weights)
    asyncio.run(driver.load_weights(flat))
    assert np.array_equal(asyncio.run(driver.read_weights()), flat)


def test_the_uart_entry_refuses_a_port_with_no_engine_behind_it(tmp_path, capsys):
    """``--uart loop://``: pyserial's loopback echoes each frame, so the identity read sees the frame, not PEZO."""
    from pezo.boards.ulx3s_engine import engine_design_json
    from pezo.driver.__main__ import main

    design = tmp_path / "design"
    design.mkdir()
    (design / "config.json").write_text(json.dumps(engine_design_json(CONFIG, 115200, 2048)))
    assert main(["--design", str(design), "--uart", "loop://", "--steps", "2"]) == 1
    assert "not the engine top of this configuration" in capsys.readouterr().err
    assert main(["--design", str(design), "--steps", "2"]) == 2
    assert "is a ULX3S design: give its serial port, --uart" in capsys.readouterr().err
