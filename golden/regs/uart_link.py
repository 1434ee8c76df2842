"""The ULX3S trainer's host link (twin of ``hw.uart_bridge`` and ``hw.uart_top``): the UARTBone framing, the
bridge's address space and the on-chip feeder's batch order.

**Framing** (LiteX UARTBone, what ``litex_server --uart`` / ``litex_cli`` speak; 8N1, no flow control):

========  =====================================================================================
request   ``cmd`` (1 byte), ``length`` (1 byte: 32-bit words, 1..255), word address (4 bytes, big
          endian: byte address // 4), then for a write ``length`` words (4 bytes each, big endian)
cmd       0x01 write, address incrementing; 0x02 read, incrementing; 0x03 write, fixed address;
          0x04 read, fixed address
answer    a read: ``length`` words, big endian, in order; a write: nothing
========  =====================================================================================

A byte that is no command while the bridge waits for one is dropped; a frame whose next byte does not come
within ``RX_TIMEOUT_BITS`` bit times is abandoned (the bridge waits for a command again). The link has no
error answer: an access the engine top answers SLVERR counts in the feeder's LINK_ERRORS register.

**Address space** (byte addresses; the word address of the frame is ``address // 4``): region
``address >> 28``: 0 the engine top's registers (``golden.regs.engine``: the same offsets), 1 its windows (the
same offsets), 2 the feeder's registers (``feeder_registers``), 3 the data memory's inputs (example e's byte k
at ``e * x_stride + k``: what the x window takes, ``BoardMap.x_bytes`` per example -- a conv layer 0's patches),
4 its labels (example e's label at byte e). Windows and the data memory are 64-bit wide: within a write frame
a word at a low half (address bit 2 = 0) that is not the frame's last word is held and written with the next word
(its high half) as one 64-bit beat, so an incrementing frame writes whole beats (the map's rule for engine
words); any other word is written alone with its four byte strobes.

**Feeder**: FEED_CONTROL.GO loads the position from FEED_START and the count from FEED_BATCHES; while the
count is not zero and the engine has a free bank (STATUS.LOAD_READY) it writes the next ``batch`` examples
of the data memory into the x and labels windows and PUSHes: batch k after GO holds the examples
``feed_indices`` gives (the data memory read in order, wrapping at FEED_EXAMPLES).
"""

from __future__ import annotations

import numpy as np

from pezo.golden.regs.spec import Field, Register, RegisterMap

CMD_WRITE, CMD_READ, CMD_WRITE_FIXED, CMD_READ_FIXED = 0x01, 0x02, 0x03, 0x04
MAX_WORDS = 255
RX_TIMEOUT_BITS = 256
"""Bit times without a byte after which the bridge abandons a frame."""
REGION_SHIFT = 28
REGIONS = {"registers": 0, "windows": 1, "feeder": 2, "data_x": 3, "data_labels": 4}
FEED_CONTROL_FIELDS = (
    Field("GO", 0, doc="load FEED_START and FEED_BATCHES, then feed"),
    Field("STOP", 1, doc="clear the count (a batch being copied is still pushed)"),
    Field("CLEAR_ERRORS", 2, doc="clear LINK_ERRORS"),
)
FEED_STATUS_FIELDS = (Field("BUSY", 0, doc="batches remain"), Field("LINK_ERROR", 1, doc="LINK_ERRORS != 0"))
FEED_CONTROL_BITS = {f.name: f.bit for f in FEED_CONTROL_FIELDS}
FEED_STATUS_BITS = {f.name: f.bit for f in FEED_STATUS_FIELDS}


def region_base(name: str) -> int:
    """Byte address of region ``name`` (``REGIONS``)."""
    if name not in REGIONS:
        raise ValueError(f"region must be one of {', '.join(REGIONS)}, got {name!r}")
    return REGIONS[name] << REGION_SHIFT


def feeder_registers() -> tuple[Register, ...]:
    """The feeder's registers (region 2), placed by ``golden.regs.spec.RegisterMap``."""
    m = RegisterMap()
    m.add("FEED_CAPACITY", "r", 16, "examples the data memory holds")
    m.add("FEED_EXAMPLES", "rw", 16, "examples loaded into the data memory (the feed wraps there)")
    m.add("FEED_START", "rw", 16, "the position GO starts from")
    m.add("FEED_BATCHES", "rw", 16, "batches GO feeds")
    m.add("FEED_CONTROL", "cmd", 3, "GO, STOP, CLEAR_ERRORS", fields=FEED_CONTROL_FIELDS)
    m.add("FEED_STATUS", "r", 2, "BUSY, LINK_ERROR", fields=FEED_STATUS_FIELDS)
    m.add("FEED_POSITION", "r", 16, "the next example the feed copies")
    m.add("FEED_PUSHED", "r", 16, "batches pushed since GO")
    m.add("LINK_ERRORS", "r", 16, "accesses the engine top answered SLVERR")
    return m.registers


def feeder_register(name: str) -> int:
    """Byte address of feeder register ``name``."""
    for r in feeder_registers():
        if r.name == name:
            return region_base("feeder") + r.offset
    raise ValueError(f"feeder register must be one of {', '.join(r.name for r in feeder_registers())}, got {name!r}")


def _check_frame(address: int, count: int) -> None:
    if not isinstance(address, int) or not 0 <= address < 1 << 32 or address % 4:
        raise ValueError(f"address must be a 4-byte aligned byte address below 2^32, got {address!r}")
    if not isinstance(count, int) or not 1 <= count <= MAX_WORDS:
        raise ValueError(f"length must be in 1..{MAX_WORDS} words, got {count!r}")


def encode_write(address: int, words, fixed: bool = False) -> bytes:
    """One write frame: ``words`` (32-bit values) from byte ``address`` on."""
    words = [int(w) for w in words]
    _check_frame(address, len(words))
    if any(not 0 <= w < 1 << 32 for w in words):
        raise ValueError("words must be 32-bit unsigned values")
    head = bytes([CMD_WRITE_FIXED if fixed else CMD_WRITE, len(words)]) + (address // 4).to_bytes(4, "big")
    return head + b"".join(w.to_bytes(4, "big") for w in words)


def encode_read(address: int, count: int, fixed: bool = False) -> bytes:
    """One read frame of ``count`` words from byte ``address`` on."""
    _check_frame(address, count)
    return bytes([CMD_READ_FIXED if fixed else CMD_READ, count]) + (address // 4).to_bytes(4, "big")


def decode_answer(data: bytes, count: int) -> list[int]:
    """The ``count`` words of a read frame's answer."""
    if len(data) != 4 * count:
        raise ValueError(f"a read answer of {count} words has {4 * count} bytes, got {len(data)}")
    return [int.from_bytes(data[4 * i : 4 * i + 4], "big") for i in range(count)]


def decode_frame(data: bytes) -> tuple[int, int, list[int], bytes]:
    """(cmd, byte address, words written (empty for a read), the bytes after the frame) of the first frame in
    ``data`` (what the bridge parses; bytes before a command byte are dropped)."""
    i = 0
    while i < len(data) and data[i] not in (CMD_WRITE, CMD_READ, CMD_WRITE_FIXED, CMD_READ_FIXED):
        i += 1
    if len(data) - i < 6:
        raise ValueError("an incomplete frame (a command, a length and a 4-byte address are needed)")
    cmd, count = data[i], data[i + 1]
    address = int.from_bytes(data[i + 2 : i + 6], "big") * 4
    end = i + 6 + (4 * count if cmd in (CMD_WRITE, CMD_WRITE_FIXED) else 0)
    if len(data) < end:
        raise ValueError(f"an incomplete write frame: {count} words announced")
    words = [int.from_bytes(data[j : j + 4], "big") for j in range(i + 6, end, 4)]
    return cmd, address, words, data[end:]


def bytes_to_words(data: bytes) -> list[int]:
    """Little-endian 32-bit words of ``data`` (byte i of the bus at address i; padded with zeros)."""
    data = bytes(data) + bytes(-len(data) % 4)
    return [int.from_bytes(data[i : i + 4], "little") for i in range(0, len(data), 4)]


def words_to_bytes(words) -> bytes:
    return b"".join(int(w).to_bytes(4, "little") for w in words)


def feed_indices(start: int, examples: int, batch: int, batches: int) -> np.ndarray:
    """Example indices [batches, batch] the feeder pushes after GO: the data memory in order from ``start``,
    wrapping at ``examples``."""
    for name, value, low in (("examples", examples, 1), ("batch", batch, 1), ("batches", batches, 0)):
        if not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if not 0 <= start < examples:
        raise ValueError(f"start must be in 0..{examples - 1}, got {start!r}")
    return (start + np.arange(batches * batch, dtype=np.int64).reshape(batches, batch)) % examples


def link_seconds(frame_bytes: int, baud: int) -> float:
    """Seconds ``frame_bytes`` take on an 8N1 line at ``baud`` (10 bit times per byte)."""
    return 10 * frame_bytes / baud


def batch_frame_bytes(inputs: int, batch: int) -> int:
    """Bytes on the line to write one batch through the windows (x in 255-word frames, the labels one word per
    example in one frame, one PUSH): what the on-chip data memory saves per step."""
    x_words = batch * -(-inputs // 4)
    frames = -(-x_words // MAX_WORDS)
    return 6 * frames + 4 * x_words + (6 + 8 * batch) + (6 + 4)


def link_budget(inputs: int, batch: int, cycles_per_step: float, clock_hz: float, bauds) -> list[dict]:
    """Per baud rate: the seconds one batch takes through the windows (``batch_frame_bytes``), the engine's seconds
    per step, their ratio, and the steps per second of host-fed batches vs batches from the on-chip memory."""
    step = cycles_per_step / clock_hz
    frame = batch_frame_bytes(inputs, batch)
    rows = []
    for baud in bauds:
        batch_s = link_seconds(frame, baud)
        rows.append(
            {
                "baud": baud,
                "batch_bytes": frame,
                "batch_seconds": batch_s,
                "step_seconds": step,
                "link_per_compute": batch_s / step,
                "host_fed_steps_per_second": 1 / max(batch_s, step),
                "on_chip_steps_per_second": 1 / step,
            }
        )
    return rows
