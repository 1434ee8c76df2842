"""The host interface (register map) and its transaction-level twin: what the Zynq PS sees.

The map is shared by the stream host (``hw.host.StreamHost``: the perturbation stream behind an
AXI4-Lite register file, until the PE-array engine takes its place) and the future engine host.
Byte offsets, 32-bit registers:

=======  ========  ====  =================================================================
offset   name      kind  meaning
=======  ========  ====  =================================================================
0x00     ID        r     0x50455A4F ("PEZO")
0x04     VERSION   r     register-map version (1)
0x08     STRATEGY  r     0 otf, 1 pregen, 2 gaussian
0x0C     LANES     r     stream values per cycle
0x10     CONTROL   cmd   bit 0 NEXT (next perturbation), bit 1 REWIND (back to its start),
                         bit 2 RUN (consume COUNT vectors), bit 8 SIGN (with NEXT/REWIND: 1 = -eps)
0x14     STATUS    r     bit 0 BUSY, bit 1 VALID (stream), bit 2 SIGN (current pass), bit 3 DONE
0x18     COUNT     rw    vectors one RUN consumes
0x1C     G         rw    projected gradient, signed Q16.16 (consumed by the engine; stored here)
0x20     STEP      r     ZO steps begun (NEXT commands), wraps at 2^32
0x24     CYCLES    r     clock cycles the last RUN was busy (COUNT plus otf alignment or pipeline refill)
0x28     SUM       r     signed sum (mod 2^32) of every value consumed since the last NEXT/REWIND
0x40+4i  RESULT_i  r     lane i of the last consumed vector, sign-extended (the engine: logit i)
=======  ========  ====  =================================================================

Semantics: a CONTROL write acts on the stream in the cycle after the write handshake (priority
NEXT > REWIND, as the stream's); NEXT and REWIND clear SUM and DONE; RUN (alone or with NEXT/REWIND)
clears CYCLES and DONE and consumes COUNT vectors, asserting the stream's ``en`` while BUSY, then
sets DONE (COUNT = 0: DONE at once). A NEXT/REWIND written while BUSY aborts the run (DONE stays 0).
Values depend only on the command sequence, not on bus timing; CYCLES does (otf alignment runs while
the host is idle), so the model gives its bounds, not its value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pezo.golden.config import PerturbConfig
from pezo.golden.rng.perturb import PerturbationStream, stream_lanes, stream_latency

HOST_ID = 0x50455A4F  # "PEZO"
HOST_VERSION = 1
STRATEGY_IDS = {"otf": 0, "pregen": 1, "gaussian": 2}
CONTROL_NEXT, CONTROL_REWIND, CONTROL_RUN, CONTROL_SIGN = 1 << 0, 1 << 1, 1 << 2, 1 << 8
STATUS_BUSY, STATUS_VALID, STATUS_SIGN, STATUS_DONE = 1 << 0, 1 << 1, 1 << 2, 1 << 3
RESULT_BASE = 0x40
RESP_OKAY, RESP_SLVERR = 0, 2
KINDS = ("r", "rw", "cmd")


@dataclass(frozen=True)
class Register:
    """One 32-bit-aligned register: ``offset`` in bytes, ``kind`` r / rw / cmd, ``width`` 1..32 bits
    (reads zero-extend, or sign-extend when ``signed``), ``init`` the reset value of an rw register."""

    name: str
    offset: int
    kind: str
    width: int = 32
    signed: bool = False
    init: int = 0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"register kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not 1 <= self.width <= 32:
            raise ValueError(f"register width must be in 1..32, got {self.width}")
        if self.offset % 4 or self.offset < 0:
            raise ValueError(f"register offset must be a non-negative multiple of 4, got {self.offset:#x}")


def register_map(config: PerturbConfig) -> tuple[Register, ...]:
    lanes = stream_lanes(config)
    return (
        Register("ID", 0x00, "r"),
        Register("VERSION", 0x04, "r"),
        Register("STRATEGY", 0x08, "r", 2),
        Register("LANES", 0x0C, "r", 11),
        Register("CONTROL", 0x10, "cmd", 9),
        Register("STATUS", 0x14, "r", 4),
        Register("COUNT", 0x18, "rw"),
        Register("G", 0x1C, "rw", signed=True),
        Register("STEP", 0x20, "r"),
        Register("CYCLES", 0x24, "r"),
        Register("SUM", 0x28, "r", signed=True),
        *(Register(f"RESULT_{i}", RESULT_BASE + 4 * i, "r", 16, signed=True) for i in range(lanes)),
    )


def addr_width(config: PerturbConfig) -> int:
    """Byte-address bits of the register window: 12 (4 KiB) unless the RESULT lanes need more."""
    top = RESULT_BASE + 4 * stream_lanes(config)
    return max(12, (top - 1).bit_length())


def _u32(value: int) -> int:
    return int(value) & 0xFFFFFFFF


class StreamHost:
    """Transaction-level twin of ``hw.host.StreamHost``: ``write(offset, value, strb)`` -> resp and
    ``read(offset)`` -> (value, resp), with unsigned 32-bit words."""

    def __init__(self, config: PerturbConfig):
        self.config = config
        self.stream = PerturbationStream(config)
        self.registers = {r.offset: r for r in register_map(config)}
        self.lanes = stream_lanes(config)
        self.count = self.g = self.step = self.sum = self.cycles_min = 0
        self.done = False
        self.last = np.zeros(self.lanes, dtype=np.int64)

    def write(self, offset: int, value: int, strb: int = 0xF) -> int:
        reg = self.registers.get(offset & ~3)
        if reg is None or reg.kind == "r":
            return RESP_SLVERR
        mask = sum(0xFF << (8 * i) for i in range(4) if strb >> i & 1) & ((1 << reg.width) - 1)
        if reg.name == "COUNT":
            self.count = (self.count & ~mask) | (value & mask)
        elif reg.name == "G":
            self.g = (self.g & ~mask) | (value & mask)
        else:
            self._control(value & mask)
        return RESP_OKAY

    def read(self, offset: int) -> tuple[int, int]:
        reg = self.registers.get(offset & ~3)
        if reg is None or reg.kind == "cmd":
            return 0, RESP_SLVERR
        value = self._value(reg.name)
        if reg.signed and value >> (reg.width - 1) & 1:
            value -= 1 << reg.width
        return _u32(value), RESP_OKAY

    def _value(self, name: str) -> int:
        if name.startswith("RESULT_"):
            return int(self.last[int(name[7:])]) & 0xFFFF
        return {
            "ID": HOST_ID,
            "VERSION": HOST_VERSION,
            "STRATEGY": STRATEGY_IDS[self.config.strategy],
            "LANES": self.lanes,
            "COUNT": self.count,
            "G": self.g,
            "STEP": self.step,
            "CYCLES": self.cycles_min,
            "SUM": _u32(self.sum),
            "STATUS": (STATUS_VALID * self.stream.valid)
            | (STATUS_SIGN * self.stream.negate)
            | (STATUS_DONE * self.done),
        }[name]

    def _control(self, bits: int) -> None:
        next_, rewind = bool(bits & CONTROL_NEXT), bool(bits & CONTROL_REWIND)
        if next_ or rewind:
            self.stream.step(next=next_, rewind=rewind, sign=bool(bits & CONTROL_SIGN))
            self.step += next_
            self.sum = 0
            self.done = False
        if bits & CONTROL_RUN:
            self.done = False
            got = 0
            while got < self.count:
                if self.stream.valid:
                    self.last = self.stream.lanes()
                    self.sum = (self.sum + int(self.last.sum())) & 0xFFFFFFFF
                    got += 1
                self.stream.step(en=True)
            self.cycles_min = self.count
            self.done = True

    def cycles_bounds(self) -> tuple[int, int]:
        """CYCLES after the last RUN lies in these bounds (otf: up to n alignment cycles more; pregen and
        gaussian: up to ``stream_latency`` more while the stream's pipeline refills after a command)."""
        extra = self.config.n_rngs if self.config.strategy == "otf" else stream_latency(self.config)
        return self.count, self.count + extra
