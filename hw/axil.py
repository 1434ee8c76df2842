"""An AXI4-Lite slave register file (what the Zynq PS's HPM0 port drives, after a protocol converter).

Contract (AMBA AXI4-Lite, 32-bit data, ``addr_width`` 4..32 byte-address bits, word registers):

* Write: the slave waits for both ``awvalid`` and ``wvalid`` (allowed: a master must not wait for
  ``ready`` before raising ``valid``), accepts both in one cycle (``awready = wready = 1``), applies
  the write on that edge and raises ``bvalid`` on the next cycle until ``bready``. One write in
  flight. ``wstrb`` selects bytes of read-write registers and of command-register bits.
* Read: ``arready`` while no read data is pending; the addressed register is sampled on the
  handshake edge and held on ``rdata`` with ``rvalid`` until ``rready``.
* ``bresp``/``rresp``: OKAY (0), or SLVERR (2) for an unmapped address, a write to a read-only
  register or a read of a write-only one (``rdata`` = 0 then). ``awprot``/``arprot`` are ignored.
* Registers (``golden.host.Register``): ``"r"`` read-only (an ``In`` port sampled on read), ``"rw"`` read-write (an
  ``Out`` port holding the value; ``<name>_written`` pulses for one cycle after a write), ``"cmd"`` write-only
  command bits (an ``Out`` port that carries the written word for exactly one cycle, the cycle after
  the write handshake, else 0; reads give SLVERR).
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pezo.golden.host import RESP_OKAY, RESP_SLVERR, Register

DATA_BITS = 32


class AXI4LiteSignature(wiring.Signature):
    """AXI4-Lite as seen by the master (``Out`` = driven by the master); a slave uses ``In(...)``."""

    def __init__(self, addr_width: int = 12):
        if not isinstance(addr_width, int) or not 4 <= addr_width <= 32:
            raise ValueError(f"addr_width must be in 4..32, got {addr_width!r}")
        self.addr_width = addr_width
        super().__init__(
            {
                "awaddr": Out(addr_width),
                "awprot": Out(3),
                "awvalid": Out(1),
                "awready": In(1),
                "wdata": Out(DATA_BITS),
                "wstrb": Out(DATA_BITS // 8),
                "wvalid": Out(1),
                "wready": In(1),
                "bresp": In(2),
                "bvalid": In(1),
                "bready": Out(1),
                "araddr": Out(addr_width),
                "arprot": Out(3),
                "arvalid": Out(1),
                "arready": In(1),
                "rdata": In(DATA_BITS),
                "rresp": In(2),
                "rvalid": In(1),
                "rready": Out(1),
            }
        )

    def __eq__(self, other):
        return type(other) is type(self) and other.addr_width == self.addr_width

    def __repr__(self):
        return f"AXI4LiteSignature({self.addr_width})"


class AXI4LiteRegisters(wiring.Component):
    """The register file: port ``s_axil`` (``In(AXI4LiteSignature)``) plus one port per register
    (and ``<name>_written`` per ``rw`` register), named after the registers."""

    def __init__(self, registers: tuple[Register, ...], addr_width: int = 12):
        names = [r.name for r in registers]
        offsets = [r.offset for r in registers]
        if len(set(names)) != len(names) or len(set(offsets)) != len(offsets):
            raise ValueError("register names and offsets must be unique")
        if any(r.offset >= 1 << addr_width for r in registers):
            raise ValueError(f"every register offset must be below 2^addr_width = {1 << addr_width:#x}")
        self.registers = tuple(registers)
        self.addr_width = addr_width
        members = {"s_axil": In(AXI4LiteSignature(addr_width))}
        for r in registers:
            if r.kind == "r":
                members[r.name] = In(r.width)
            elif r.kind == "rw":
                members[r.name] = Out(r.width, init=r.init)
                members[r.name + "_written"] = Out(1)
            else:
                members[r.name] = Out(r.width)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        bus = self.s_axil
        word = slice(2, self.addr_width)

        # write channel
        write = Signal()
        m.d.comb += write.eq(bus.awvalid & bus.wvalid & ~bus.bvalid)
        m.d.comb += [bus.awready.eq(write), bus.wready.eq(write)]
        with m.If(bus.bvalid & bus.bready):
            m.d.sync += bus.bvalid.eq(0)
        byte_mask = Signal(DATA_BITS)
        m.d.comb += byte_mask.eq(sum((bus.wstrb[i].replicate(8) << (8 * i)) for i in range(DATA_BITS // 8)))
        for r in self.registers:
            port = getattr(self, r.name)
            if r.kind == "cmd":
                m.d.sync += port.eq(0)
            elif r.kind == "rw":
                m.d.sync += getattr(self, r.name + "_written").eq(0)
        with m.If(write):
            m.d.sync += [bus.bvalid.eq(1), bus.bresp.eq(RESP_SLVERR)]
            with m.Switch(bus.awaddr[word]):
                for r in self.registers:
                    if r.kind == "r":
                        continue
                    with m.Case(r.offset >> 2):
                        port = getattr(self, r.name)
                        m.d.sync += bus.bresp.eq(RESP_OKAY)
                        if r.kind == "rw":
                            mask = byte_mask[: r.width]
                            m.d.sync += [
                                port.eq((port & ~mask) | (bus.wdata[: r.width] & mask)),
                                getattr(self, r.name + "_written").eq(1),
                            ]
                        else:
                            m.d.sync += port.eq(bus.wdata[: r.width] & byte_mask[: r.width])

        # read channel
        m.d.comb += bus.arready.eq(~bus.rvalid)
        with m.If(bus.rvalid & bus.rready):
            m.d.sync += bus.rvalid.eq(0)
        with m.If(bus.arvalid & ~bus.rvalid):
            m.d.sync += [bus.rvalid.eq(1), bus.rresp.eq(RESP_SLVERR), bus.rdata.eq(0)]
            with m.Switch(bus.araddr[word]):
                for r in self.registers:
                    if r.kind == "cmd":
                        continue
                    with m.Case(r.offset >> 2):
                        value = getattr(self, r.name)
                        value = value.as_signed() if r.signed else value
                        m.d.sync += [bus.rresp.eq(RESP_OKAY), bus.rdata.eq(value)]
        return m
