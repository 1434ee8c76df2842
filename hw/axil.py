"""An AXI4-Lite slave register file (what the Zynq PS's HPM0 port drives, after a protocol converter).

Contract (AMBA AXI4-Lite, 32-bit data, ``addr_width`` 4..32 byte-address bits, word registers):

* Write: the slave waits for both ``awvalid`` and ``wvalid`` (allowed: a master must not wait for
  ``ready`` before raising ``valid``) and accepts both in one cycle (``awready = wready = 1``). The
  handshake edge registers the decoded address, the data and the strobes; the next edge applies the
  write and raises ``bvalid`` until ``bready`` (so the write takes effect in the cycle ``bvalid`` rises).
  One write in flight. ``wstrb`` selects bytes of read-write registers and of command-register bits.
* Read: ``arready = arvalid`` while no read is pending or held (a slave may wait for ``valid``); the
  handshake edge registers the decoded address, the next edge samples the addressed register onto ``rdata``
  and raises ``rvalid`` until ``rready``.
  (Two register stages, so no path holds the address decode and the read mux together.)
* ``bresp``/``rresp``: OKAY (0), or SLVERR (2) for an unmapped address, a write to a read-only
  register or a read of a write-only one (``rdata`` = 0 then). ``awprot``/``arprot`` are ignored.
* Registers (``golden.regs.spec.Register``): ``"r"`` read-only (an ``In`` port sampled on read), ``"rw"`` read-write (an
  ``Out`` port holding the value; ``<name>_written`` pulses in the cycle ``bvalid`` rises), ``"cmd"`` write-only
  command bits (an ``Out`` port that carries the written word for exactly one cycle, the cycle
  ``bvalid`` rises, else 0; reads give SLVERR).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from pezo.golden.regs.spec import RESP_OKAY, RESP_SLVERR, Register

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

        def decode(addr, registers, prefix):  # a flag per register, set by the handshake edge iff addr selects it
            flags = [Signal(name=f"{prefix}_{r.name}") for r in registers]
            return flags, Cat(*(addr[word] == r.offset >> 2 for r in registers))

        # write channel: the handshake edge registers the decoded address, the data and the byte mask; the next
        # edge applies them and raises bvalid
        writable = [r for r in self.registers if r.kind != "r"]
        w_pending, w_data, w_mask = Signal(), Signal(DATA_BITS), Signal(DATA_BITS)
        w_sel, w_hit = decode(bus.awaddr, writable, "w_sel")
        accept = Signal()
        m.d.comb += accept.eq(bus.awvalid & bus.wvalid & ~bus.bvalid & ~w_pending)
        m.d.comb += [bus.awready.eq(accept), bus.wready.eq(accept)]
        m.d.sync += w_pending.eq(accept)
        with m.If(accept):
            byte_mask = Cat(*(bus.wstrb[i].replicate(8) for i in range(DATA_BITS // 8)))
            m.d.sync += [Cat(*w_sel).eq(w_hit), w_data.eq(bus.wdata), w_mask.eq(byte_mask)]
        with m.If(bus.bvalid & bus.bready):
            m.d.sync += bus.bvalid.eq(0)
        for r in self.registers:
            if r.kind == "cmd":
                m.d.sync += getattr(self, r.name).eq(0)
            elif r.kind == "rw":
                m.d.sync += getattr(self, r.name + "_written").eq(0)
        with m.If(w_pending):
            m.d.sync += [bus.bvalid.eq(1), bus.bresp.eq(Mux(Cat(*w_sel).any(), RESP_OKAY, RESP_SLVERR))]
        for r, sel in zip(writable, w_sel):
            port, mask = getattr(self, r.name), w_mask[: r.width]
            with m.If(w_pending & sel):
                if r.kind == "rw":
                    m.d.sync += [
                        port.eq((port & ~mask) | (w_data[: r.width] & mask)),
                        getattr(self, r.name + "_written").eq(1),
                    ]
                else:
                    m.d.sync += port.eq(w_data[: r.width] & mask)

        # read channel: the handshake edge registers the decoded address; the next edge samples the selected
        # register (an AND-OR over the flags) onto rdata and raises rvalid
        readable = [r for r in self.registers if r.kind != "cmd"]
        r_pending = Signal()
        r_sel, r_hit = decode(bus.araddr, readable, "r_sel")
        take = Signal()
        m.d.comb += [take.eq(bus.arvalid & ~bus.rvalid & ~r_pending), bus.arready.eq(take)]
        m.d.sync += r_pending.eq(take)
        with m.If(take):
            m.d.sync += Cat(*r_sel).eq(r_hit)
        with m.If(bus.rvalid & bus.rready):
            m.d.sync += bus.rvalid.eq(0)
        selected = []
        for r, sel in zip(readable, r_sel):
            word_value = Signal(DATA_BITS, name=f"r_word_{r.name}")  # the register as a bus word (signed: extended)
            port = getattr(self, r.name)
            m.d.comb += word_value.eq(port.as_signed() if r.signed else port)
            selected.append(word_value & sel.replicate(DATA_BITS))
        with m.If(r_pending):
            m.d.sync += [
                bus.rvalid.eq(1),
                bus.rresp.eq(Mux(Cat(*r_sel).any(), RESP_OKAY, RESP_SLVERR)),
                bus.rdata.eq(_or_tree(selected) if selected else 0),
            ]
        return m


def _or_tree(values):
    """The bitwise OR of ``values`` as a balanced tree."""
    while len(values) > 1:
        values = [values[i] | values[i + 1] if i + 1 < len(values) else values[i] for i in range(0, len(values), 2)]
    return values[0]
