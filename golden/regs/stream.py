"""The stream host's register map (``hw.host.StreamHost``: the perturbation stream behind an AXI4-Lite register
file) and its transaction-level twin: what the Zynq PS sees of the stream-only top.

``register_map(config)`` is the map (``golden.regs.spec``: offsets placed by the builder, a doc line each;
``boards.zcu102`` writes its C header with ``golden.regs.header.stream_header``). Byte offsets, 32-bit registers.

Semantics: a CONTROL write acts on the stream in the cycle after the write handshake (priority
NEXT > REWIND, as the stream's); NEXT and REWIND clear SUM and DONE; RUN (alone or with NEXT/REWIND)
clears CYCLES and DONE and consumes COUNT vectors, asserting the stream's ``en`` while BUSY, then
sets DONE (COUNT = 0: DONE at once). A NEXT/REWIND written while BUSY aborts the run (DONE stays 0).
Values depend only on the command sequence, not on bus timing; CYCLES does (otf alignment runs while
the host is idle), so the model gives its bounds, not its value.
"""

from __future__ import annotations

import numpy as np

from pezo.golden.config import PerturbConfig
from pezo.golden.engine.ops import Strategy, codes
from pezo.golden.regs.spec import RESP_OKAY, RESP_SLVERR, Field, Register, RegisterMap
from pezo.golden.rng.perturb import PerturbationStream, stream_lanes, stream_latency

HOST_ID = 0x50455A4F  # "PEZO"
HOST_VERSION = 1
STRATEGY_IDS = codes(Strategy)
RESULT_BASE = 0x40
CONTROL_FIELDS = (
    Field("NEXT", 0, doc="next perturbation"),
    Field("REWIND", 1, doc="back to its start"),
    Field("RUN", 2, doc="consume COUNT vectors"),
    Field("SIGN", 8, doc="with NEXT/REWIND: 1 = -eps"),
)
STATUS_FIELDS = (
    Field("BUSY", 0),
    Field("VALID", 1, doc="the stream's"),
    Field("SIGN", 2, doc="the current pass"),
    Field("DONE", 3),
)
CONTROL_NEXT, CONTROL_REWIND, CONTROL_RUN, CONTROL_SIGN = (f.mask for f in CONTROL_FIELDS)
STATUS_BUSY, STATUS_VALID, STATUS_SIGN, STATUS_DONE = (f.mask for f in STATUS_FIELDS)


def register_map(config: PerturbConfig) -> tuple[Register, ...]:
    """The stream host's registers for ``config`` (``LANES`` RESULT registers from ``RESULT_BASE``)."""
    m = RegisterMap()
    m.add("ID", "r", doc=f'0x{HOST_ID:08X} ("PEZO")')
    m.add("VERSION", "r", doc=f"register-map version ({HOST_VERSION})")
    m.add("STRATEGY", "r", 2, doc=", ".join(f"{int(s)} {s.name.lower()}" for s in Strategy))
    m.add("LANES", "r", 11, doc="stream values per cycle")
    m.add("CONTROL", "cmd", 9, doc="NEXT / REWIND / RUN, SIGN with NEXT/REWIND", fields=CONTROL_FIELDS)
    m.add("STATUS", "r", 4, doc="BUSY, VALID (stream), SIGN (current pass), DONE", fields=STATUS_FIELDS)
    m.add("COUNT", "rw", doc="vectors one RUN consumes")
    m.add("G", "rw", signed=True, doc="projected gradient, signed Q16.16 (consumed by the engine; stored here)")
    m.add("STEP", "r", doc="ZO steps begun (NEXT commands), wraps at 2^32")
    m.add("CYCLES", "r", doc="clock cycles the last RUN was busy (COUNT plus otf alignment or pipeline refill)")
    m.add("SUM", "r", signed=True, doc="signed sum (mod 2^32) of every value consumed since the last NEXT/REWIND")
    m.skip_to(RESULT_BASE)
    m.array("RESULT", stream_lanes(config), "r", 16, signed=True, doc="lane {i} of the last consumed vector")
    return m.registers


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
