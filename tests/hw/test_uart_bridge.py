"""hw.uart_bridge on Amaranth's simulator: UARTBone frames (golden.regs.uart_link) in on rx, bus accesses out, read
answers back on tx; 64-bit regions get whole beats, junk bytes are dropped, a stalled frame times out."""

from pezo.golden.regs.uart_link import RX_TIMEOUT_BITS, decode_answer, encode_read, encode_write, region_base
from pezo.hw.uart_bridge import UARTBridge
from pezo.sim.amaranth_sim import simulate

DIVISOR = 4


def _line_bits(data: bytes) -> list[int]:
    """The rx line, one entry per cycle: 8N1 frames, LSB first, one idle bit between bytes."""
    bits = []
    for byte in data:
        bits += [0] + [byte >> i & 1 for i in range(8)] + [1, 1]
    return [b for b in bits for _ in range(DIVISOR)]


def _decode_line(levels: list[int]) -> bytes:
    out, i = bytearray(), 0
    while i < len(levels):
        if levels[i] == 0:
            mid = i + DIVISOR // 2
            out.append(sum(levels[mid + DIVISOR * (k + 1)] << k for k in range(8)))
            i = mid + 9 * DIVISOR
        else:
            i += 1
    return bytes(out)


def _run(stream: bytes, memory: dict, idle_cycles: int = 0, gap_at: int | None = None):
    """Send ``stream`` (with ``idle_cycles`` of silence after byte ``gap_at``); serve the bus from ``memory``
    (64-bit words by beat address, 2-cycle latency). Returns (accesses, tx bytes)."""
    dut = UARTBridge(DIVISOR)
    line = _line_bits(stream[:gap_at]) + [1] * idle_cycles + _line_bits(stream[gap_at:] if gap_at else b"")
    if gap_at is None:
        line = _line_bits(stream)
    accesses, tx = [], []

    async def bench(ctx):
        wait = 0
        for cycle in range(len(line) + 120 * 10 * DIVISOR):
            ctx.set(dut.rx, line[cycle] if cycle < len(line) else 1)
            ctx.set(dut.bus.ack, 0)
            if ctx.get(dut.bus.req):
                wait += 1
                if wait == 3:
                    addr, we = ctx.get(dut.bus.addr), ctx.get(dut.bus.we)
                    data, strb = ctx.get(dut.bus.wdata), ctx.get(dut.bus.wstrb)
                    beat = addr >> 3
                    if we:
                        mask = sum(0xFF << (8 * i) for i in range(8) if strb >> i & 1)
                        memory[beat] = memory.get(beat, 0) & ~mask | data & mask
                        accesses.append(("w", addr, data, strb))
                    else:
                        accesses.append(("r", addr))
                    ctx.set(dut.bus.rdata, memory.get(beat, 0))
                    ctx.set(dut.bus.ack, 1)
                    wait = -1
            else:
                wait = 0
            tx.append(ctx.get(dut.tx))
            await ctx.tick()

    simulate(dut, bench)
    return accesses, _decode_line(tx)


def test_a_window_frame_writes_whole_beats_then_reads_back():
    base = region_base("windows") + 0x40
    words = [0x03020100, 0x07060504, 0x0B0A0908]  # a beat and a half
    stream = encode_write(base, words) + b"\x55" + encode_read(base, 3)  # 0x55: no command, dropped
    memory = {}
    accesses, answer = _run(stream, memory)
    writes = [a for a in accesses if a[0] == "w"]
    assert writes == [
        ("w", base, 0x0706050403020100, 0xFF),  # the low half held and written with its high half
        ("w", base + 8, 0x0B0A0908_0B0A0908, 0x0F),  # the frame's last word alone, low lane
    ]
    assert decode_answer(answer, 3) == words


def test_register_words_are_single_32_bit_accesses():
    memory = {}
    accesses, answer = _run(encode_write(0x10, [5, 6]) + encode_read(0x14, 1), memory)
    assert [a[3] for a in accesses if a[0] == "w"] == [0x0F, 0xF0]  # a register region: no beat merging
    assert decode_answer(answer, 1) == [6]


def test_a_stalled_frame_is_abandoned():
    stream = encode_write(0x10, [0x1234]) + encode_read(0x10, 1)
    # silence after the first 4 bytes of the write frame: the bridge drops it and parses the rest as new frames;
    # the read answers the word no write touched
    accesses, answer = _run(stream[:4] + stream[10:], {}, idle_cycles=(RX_TIMEOUT_BITS + 20) * DIVISOR, gap_at=4)
    assert [a for a in accesses if a[0] == "w"] == []
    assert decode_answer(answer, 1) == [0]
