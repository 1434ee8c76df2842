"""An AXI4 (full, burst) slave front end with 64-bit data: turns bursts into one beat request per cycle
for a backend with fixed latencies (what ``hw.engine_top`` puts the engine's memories behind).

Contract (AMBA AXI4, ``data_bits`` = 64, ``addr_width`` byte-address bits, ``id_bits`` ID bits):

* One burst at a time, reads and writes alternate: AW is accepted (``awready``) only while no write
  burst, no write response and no read burst is in progress; AR only while no write burst is. INCR and
  FIXED bursts of any ``len`` (1..256 beats) and ``size`` <= 3 (the beat address advances by
  2^size for INCR); WRAP bursts are answered SLVERR and reach no backend.
* Write: after AW, ``wready`` is high for the burst's beats (one per cycle). Each accepted beat is
  registered and presented to the backend the next cycle (``wr_valid``, ``wr_addr`` its byte address,
  ``wr_data``, ``wr_strb``; ``wr_addr_next`` is the address ``wr_addr`` takes in the next cycle, for a
  backend that decodes it a stage early); the backend answers ``wr_err`` one cycle after ``wr_valid``. ``bvalid``
  rises the cycle after the last beat's answer, ``bresp`` SLVERR if any beat's was, ``bid`` = ``awid``.
* Read: after AR, one beat request per cycle (``rd_valid``, ``rd_addr``) while the response FIFO has
  room for everything in flight; the backend answers ``rd_data`` / ``rd_err`` exactly ``read_latency``
  cycles after ``rd_valid`` (``rd_addr_next`` is the address ``rd_addr`` takes in the next cycle, for a backend that
  registers what it decodes from it). Beats leave in order through a FIFO (``rvalid`` until ``rready``, ``rlast``
  on the last, ``rresp`` SLVERR per beat, ``rid`` = ``arid``), so ``rready`` may stall at any time.
* Ports are named ``s_axi__awaddr`` etc. in Verilog (cocotbext-axi: ``AxiBus.from_prefix(dut, "s_axi_")``).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from pezo.golden.regs.spec import RESP_OKAY, RESP_SLVERR

DATA_BITS = 64
BURST_FIXED, BURST_INCR, BURST_WRAP = 0, 1, 2
READ_FIFO_DEPTH = 16


class AXI4Signature(wiring.Signature):
    """AXI4 as seen by the master (``Out`` = driven by the master); a slave uses ``In(...)``."""

    def __init__(self, addr_width: int, id_bits: int = 16):
        if not isinstance(addr_width, int) or not 12 <= addr_width <= 40:
            raise ValueError(f"addr_width must be in 12..40, got {addr_width!r}")
        if not isinstance(id_bits, int) or not 1 <= id_bits <= 32:
            raise ValueError(f"id_bits must be in 1..32, got {id_bits!r}")
        self.addr_width, self.id_bits = addr_width, id_bits
        members = {}
        for ch in ("aw", "ar"):
            members.update(
                {
                    f"{ch}id": Out(id_bits),
                    f"{ch}addr": Out(addr_width),
                    f"{ch}len": Out(8),
                    f"{ch}size": Out(3),
                    f"{ch}burst": Out(2),
                    f"{ch}lock": Out(1),
                    f"{ch}cache": Out(4),
                    f"{ch}prot": Out(3),
                    f"{ch}valid": Out(1),
                    f"{ch}ready": In(1),
                }
            )
        members.update(
            {
                "wdata": Out(DATA_BITS),
                "wstrb": Out(DATA_BITS // 8),
                "wlast": Out(1),
                "wvalid": Out(1),
                "wready": In(1),
                "bid": In(id_bits),
                "bresp": In(2),
                "bvalid": In(1),
                "bready": Out(1),
                "rid": In(id_bits),
                "rdata": In(DATA_BITS),
                "rresp": In(2),
                "rlast": In(1),
                "rvalid": In(1),
                "rready": Out(1),
            }
        )
        super().__init__(members)

    def __eq__(self, other):
        return type(other) is type(self) and (other.addr_width, other.id_bits) == (self.addr_width, self.id_bits)

    def __repr__(self):
        return f"AXI4Signature({self.addr_width}, {self.id_bits})"


class AXI4Slave(wiring.Component):
    """The front end (module docstring): port ``s_axi`` plus the backend's beat ports."""

    def __init__(self, addr_width: int, read_latency: int, id_bits: int = 16):
        if not isinstance(read_latency, int) or not 1 <= read_latency <= READ_FIFO_DEPTH - 2:
            raise ValueError(f"read_latency must be in 1..{READ_FIFO_DEPTH - 2}, got {read_latency!r}")
        self.read_latency = read_latency
        super().__init__(
            {
                "s_axi": In(AXI4Signature(addr_width, id_bits)),
                "wr_valid": Out(1),
                "wr_addr": Out(addr_width),
                "wr_addr_next": Out(addr_width),
                "wr_data": Out(DATA_BITS),
                "wr_strb": Out(DATA_BITS // 8),
                "wr_err": In(1),
                "rd_valid": Out(1),
                "rd_addr": Out(addr_width),
                "rd_addr_next": Out(addr_width),
                "rd_data": In(DATA_BITS),
                "rd_err": In(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        bus = self.s_axi
        aw = bus.signature.addr_width

        # -- write: AW -> beats (one per cycle) -> backend -> response -----------------------------
        w_active, w_addr, w_size, w_fixed, w_bad, w_id = (
            Signal(),
            Signal(aw),
            Signal(3),
            Signal(),
            Signal(),
            Signal.like(bus.awid),
        )
        last1, last2, bad1, err_acc = Signal(), Signal(), Signal(), Signal()
        r_active, r_inflight = Signal(), Signal()
        aw_ok = ~w_active & ~bus.bvalid & ~last1 & ~last2 & ~r_active & ~r_inflight
        m.d.comb += [bus.awready.eq(aw_ok), bus.wready.eq(w_active)]
        # the backend answers wr_err one cycle after wr_valid; bresp is SLVERR if any beat's answer was
        valid2, err_now = Signal(), Signal()
        m.d.sync += valid2.eq(self.wr_valid)
        m.d.comb += err_now.eq(err_acc | bad1 | (self.wr_err & valid2))
        m.d.sync += err_acc.eq(err_now)
        with m.If(bus.awvalid & aw_ok):  # after the accumulation: the clear wins
            m.d.sync += [
                w_active.eq(1),
                w_addr.eq(bus.awaddr),
                w_size.eq(Mux(bus.awsize > 3, 3, bus.awsize)),
                w_fixed.eq(bus.awburst == BURST_FIXED),
                w_bad.eq((bus.awburst == BURST_WRAP) | (bus.awsize > 3)),
                w_id.eq(bus.awid),
                err_acc.eq(0),
            ]
        beat = w_active & bus.wvalid
        m.d.comb += self.wr_addr_next.eq(w_addr)
        m.d.sync += [
            self.wr_valid.eq(beat & ~w_bad),
            self.wr_addr.eq(w_addr),
            self.wr_data.eq(bus.wdata),
            self.wr_strb.eq(bus.wstrb),
            last1.eq(beat & bus.wlast),
            bad1.eq(beat & w_bad),
            last2.eq(last1),
        ]
        with m.If(beat):
            m.d.sync += w_addr.eq(Mux(w_fixed, w_addr, w_addr + (1 << w_size)))
            with m.If(bus.wlast):
                m.d.sync += w_active.eq(0)
        with m.If(last2):  # the last beat's answer is in err_now
            m.d.sync += [bus.bvalid.eq(1), bus.bresp.eq(Mux(err_now, RESP_SLVERR, RESP_OKAY)), bus.bid.eq(w_id)]
        with m.Elif(bus.bvalid & bus.bready):
            m.d.sync += bus.bvalid.eq(0)

        # -- read: AR -> one request per cycle (with credit) -> fixed latency -> FIFO -> R ------------
        id_bits = len(bus.arid)
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=DATA_BITS + 3 + id_bits, depth=READ_FIFO_DEPTH)
        r_addr, r_size, r_fixed, r_bad, r_id, r_left = (
            Signal(aw),
            Signal(3),
            Signal(),
            Signal(),
            Signal.like(bus.arid),
            Signal(8),
        )
        ar_ok = ~r_active & ~w_active & ~last1 & ~last2
        m.d.comb += bus.arready.eq(ar_ok)
        with m.If(bus.arvalid & ar_ok):
            m.d.sync += [
                r_active.eq(1),
                r_addr.eq(bus.araddr),
                r_size.eq(Mux(bus.arsize > 3, 3, bus.arsize)),
                r_fixed.eq(bus.arburst == BURST_FIXED),
                r_bad.eq((bus.arburst == BURST_WRAP) | (bus.arsize > 3)),
                r_id.eq(bus.arid),
                r_left.eq(bus.arlen),
            ]
        L = self.read_latency
        flight = [Signal(name=f"r_flight_{i}") for i in range(L + 1)]  # flight[i]: rd_valid was up i cycles ago
        meta = [Signal(2 + id_bits, name=f"r_meta_{i}") for i in range(L + 1)]  # bad, last, id
        # the entries reserved in the FIFO (its level + the requests in flight) are a register of their own, +1
        # per request, -1 per beat the master takes, and so is its room: a request starts from two flip-flops, not
        # from an adder of the level and the flight bits (the r_flight -> issue -> r_addr path limited the
        # digits-mlp trainer top on ECP5)
        reserved, room = Signal(range(READ_FIFO_DEPTH + 1)), Signal(name="r_room", init=1)
        issue, popped = Signal(), Signal()
        m.d.comb += [
            r_inflight.eq(Cat(*flight).any()),
            issue.eq(r_active & room),
            popped.eq(fifo.r_en & fifo.r_rdy),
        ]
        reserved_next = reserved + issue - popped
        m.d.sync += [reserved.eq(reserved_next), room.eq(reserved_next < READ_FIFO_DEPTH)]
        m.d.sync += [
            self.rd_valid.eq(issue & ~r_bad),
            self.rd_addr.eq(r_addr),
            flight[0].eq(issue),
            meta[0].eq(Cat(r_bad, r_left == 0, r_id)),
        ]
        m.d.comb += self.rd_addr_next.eq(r_addr)
        for i in range(1, L + 1):
            m.d.sync += [flight[i].eq(flight[i - 1]), meta[i].eq(meta[i - 1])]
        with m.If(issue):
            m.d.sync += [r_addr.eq(Mux(r_fixed, r_addr, r_addr + (1 << r_size))), r_left.eq(r_left - 1)]
            with m.If(r_left == 0):
                m.d.sync += r_active.eq(0)
        # the answer to the request whose rd_valid was up L cycles ago -> FIFO entry (data, resp, last, id)
        bad_done, last_done, id_done = meta[L][0], meta[L][1], meta[L][2:]
        resp = Mux(bad_done | self.rd_err, RESP_SLVERR, RESP_OKAY)
        m.d.comb += [
            fifo.w_en.eq(flight[L]),
            fifo.w_data.eq(Cat(Mux(bad_done, 0, self.rd_data), resp, last_done, id_done)),
        ]
        m.d.comb += [
            bus.rvalid.eq(fifo.r_rdy),
            bus.rdata.eq(fifo.r_data[:DATA_BITS]),
            bus.rresp.eq(fifo.r_data[DATA_BITS : DATA_BITS + 2]),
            bus.rlast.eq(fifo.r_data[DATA_BITS + 2]),
            bus.rid.eq(fifo.r_data[DATA_BITS + 3 :]),
            fifo.r_en.eq(bus.rready),
        ]
        return m
