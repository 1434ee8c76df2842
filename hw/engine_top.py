"""The engine top (twin of ``golden.regs.engine``): the network engine behind an AXI4-Lite register file
(``s_axil``, control/status) and an AXI4 burst slave (``s_axi``, 64-bit: weights, batch, labels, biases,
logits, step log), with ``irq`` for the Zynq PS.

Pipeline (Fmax): an AXI4 write beat is registered by ``hw.axi4.AXI4Slave`` (S1), decoded and merged into
the engine word (S2 registers), and S2's registers drive the engine's host ports; a read request is a
register (R0) whose decoded fields drive the engine's read ports, the answer is aligned to
``READ_LATENCY`` = ``LOGIT_READ_LATENCY`` + 1 cycles and registered once more before the read FIFO.
The register file's command bits reach the engine one cycle after the write handshake (registered).

* A batch write (x, labels) goes into bank ``load_bank`` (the engine's free bank) and only while
  ``load_ready``; otherwise the beat is dropped, answered SLVERR and STATUS.ERROR is set (sticky until
  CONTROL.CLEAR_ERROR) -- never a write into the bank in use. Whether a bank is free is decided in
  the cycle the beat reaches the engine (S2).
* The x window carries the batch memory's words as they are (``BoardMap.x_bytes`` per example: a dense layer 0's
  inputs, a conv layer 0's im2col'd patches, ``golden.engine.network.batch_words``).
* ``irq`` (registered) = any of the pending bits (DONE: the engine's ``done`` rose; STEP: a TRAIN step
  finished) enabled in IRQ_ENABLE; CONTROL.ACK_DONE / ACK_STEP clear them.
* The step log: at each ``step_done``, record ``(steps_done - 1) % STEP_LOG_DEPTH`` gets the step's L+,
  L-, g and logit bank (one memory, read through the ``steps`` window). On ECP5 (``hw.engine.dsp.is_ecp5``)
  the memory is DP16KD blocks read through their output register (``hw.engine.ebr``); there a read of the record
  the engine overwrites in that very cycle (a host ``STEP_LOG_DEPTH`` steps behind, which the driver refuses)
  returns an undefined word, the generic memory the old record.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pezo.golden.engine.loss import LOSS_BITS
from pezo.golden.engine.network import NetConfig
from pezo.golden.engine.zo_engine import G_BITS
from pezo.golden.regs.engine import (
    BEAT_BYTES,
    CONTROL_BITS,
    ENGINE_MAP_VERSION,
    IRQ_BITS,
    REGISTER_ADDR_BITS,
    STATUS_BITS,
    STEP_LOG_DEPTH,
    WINDOW_NAMES,
    BoardMap,
)
from pezo.golden.regs.stream import HOST_ID
from pezo.hw.axi4 import AXI4Signature, AXI4Slave
from pezo.hw.axil import AXI4LiteRegisters, AXI4LiteSignature
from pezo.hw.component import ConfigComponent, ConfigSignature
from pezo.hw.engine.dsp import is_ecp5
from pezo.hw.engine.ebr import ebr_memory
from pezo.hw.engine.net_engine import W_READ_LATENCY, NetEngine
from pezo.hw.engine.pe_array import LOGIT_READ_LATENCY

READ_LATENCY = LOGIT_READ_LATENCY + 1
"""Cycles from the AXI4 front end's read request to its answer: the engine's logit read plus the
selection register."""
ID_BITS = 16
"""AXI IDs of the Zynq UltraScale+ HPM ports."""


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _beat_fields(bmap: BoardMap, addr):
    """The slices of a beat's byte address."""
    C = bmap.config.array.cols
    chunks, slot_bits, xs = C // BEAT_BYTES, bmap.slot_bits, _log2(bmap.x_stride)
    window, off = addr[slot_bits : slot_bits + 3], addr[:slot_bits]
    x_k = off[:xs]
    return SimpleNamespace(
        window=window,
        w_word=off[_log2(C) :],
        w_chunk=off[3 : _log2(C)] if chunks > 1 else Const(0, 1),
        x_example=off[xs:],
        x_k=x_k,
        x_word=x_k[_log2(C) :],
        x_chunk=x_k[3 : _log2(C)] if chunks > 1 else Const(0, 1),
        entry=off[3:],
    )


def _beat_checks(bmap: BoardMap, addr, wdata, strb):
    """The beat's window flags, chunk, commit and range/strobe check."""
    cfg = bmap.config
    B, O, chunks = cfg.array.batch, cfg.outputs, cfg.array.cols // BEAT_BYTES
    has_bias, win = bmap.has_bias, {name: i for i, name in enumerate(WINDOW_NAMES)}
    f = _beat_fields(bmap, addr)
    is_w, is_x = f.window == win["weights"], f.window == win["x"]
    is_y, is_b = f.window == win["labels"], f.window == win["biases"]
    chunk = Mux(is_x, f.x_chunk, f.w_chunk)
    ok = Mux(
        is_w,
        f.w_word < cfg.memory_words,
        Mux(
            is_x,
            (f.x_example < B) & (f.x_k < bmap.x_bytes),
            Mux(
                is_y,
                (f.entry < B) & (wdata[:8] < O) & strb[0],
                Mux(is_b, (f.entry < cfg.total_outputs) & (strb[:4] == 0xF) if has_bias else 0, 0),
            ),
        ),
    )
    commit = (chunk == chunks - 1) & strb[BEAT_BYTES - 1]
    return [Cat(is_w, is_x, is_y, is_b), chunk, commit, ok]


class EngineTop(ConfigComponent):
    """Ports ``s_axil`` (``In(AXI4LiteSignature(12))``), ``s_axi`` (``In(AXI4Signature(addr_width, 16))``),
    ``irq`` (Out 1) and ``leds`` (Out 8: BUSY, DONE, LOAD_READY, ERROR, IRQ, STEPS_DONE[2:0]); map and
    semantics in ``golden.regs.engine``."""

    class Signature(ConfigSignature):
        config_type = NetConfig

        def members_for(self, cfg):
            bmap = BoardMap(cfg)  # the board's own checks (cols)
            return {
                "s_axil": In(AXI4LiteSignature(REGISTER_ADDR_BITS)),
                "s_axi": In(AXI4Signature(bmap.addr_width, ID_BITS)),
                "irq": Out(1),
                "leds": Out(8),
            }

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        bmap = BoardMap(cfg)
        m.submodules.engine = eng = NetEngine(cfg)
        m.submodules.regs = regs = AXI4LiteRegisters(bmap.registers, REGISTER_ADDR_BITS)
        m.submodules.axi = axi = AXI4Slave(bmap.addr_width, READ_LATENCY, ID_BITS)
        wiring.connect(m, wiring.flipped(self.s_axil), regs.s_axil)
        wiring.connect(m, wiring.flipped(self.s_axi), axi.s_axi)
        self._control(m, cfg, eng, regs)
        f, is_w, error = self._write_path(m, bmap, eng, axi, regs.CONTROL)
        self._read_path(m, platform, bmap, eng, axi, f, is_w)
        self._status(m, bmap, eng, regs, error)
        return m

    def _control(self, m, cfg, eng, regs):
        """Control registers -> engine."""
        ctrl = regs.CONTROL
        m.d.comb += [
            eng.start.eq(ctrl[CONTROL_BITS["START"]]),
            eng.push.eq(ctrl[CONTROL_BITS["PUSH"]]),
            eng.op.eq(regs.OP),
            eng.steps.eq(regs.STEPS),
            eng.g.eq(regs.G),
            eng.g_mode.eq(regs.G_MODE),
            eng.margin.eq(regs.MARGIN),
            eng.g_lr.eq(regs.G_LR),
            eng.g_shift.eq(regs.G_SHIFT),
            eng.wd_shift.eq(regs.WD_SHIFT),
            eng.wd_every.eq(regs.WD_EVERY),
            eng.requant_shift.eq(regs.REQUANT_SHIFT),
        ]
        if cfg.backprop:
            m.d.comb += [eng.split.eq(regs.SPLIT), eng.bp_bits.eq(regs.BP_BITS), regs.BP_CYCLES.eq(eng.bp_cycles)]

    def _write_path(self, m, bmap, eng, axi, ctrl):
        """The write path: S1 (the front end's beat registers) -> decode + merge -> S2 -> engine ports. The beat's
        checks (window, range, strobes, the chunk) are decoded one stage early, from the address the front end
        registers next (``wr_addr_next``) and the bus's data and strobes (which it registers every cycle), into S1
        registers beside the beat's: the same values, and the assembly's enable starts at flip-flops (the wr_addr ->
        decode -> asm enable path limited the digits-mlp trainer top on ECP5). Returns the beat's fields (S1), its
        weights flag and the sticky error."""
        cfg = bmap.config
        C, B, O = cfg.array.cols, cfg.array.batch, cfg.outputs
        chunks = C // BEAT_BYTES
        has_bias = bmap.has_bias
        s1_kind, s1_chunk, s1_commit, s1_ok = Signal(4), Signal(max(1, _log2(chunks))), Signal(), Signal()
        m.d.sync += Cat(s1_kind, s1_chunk, s1_commit, s1_ok).eq(
            Cat(*_beat_checks(bmap, axi.wr_addr_next, self.s_axi.wdata, self.s_axi.wstrb))
        )
        f = _beat_fields(bmap, axi.wr_addr)
        strb, wdata = axi.wr_strb, axi.wr_data
        is_w, is_x, is_y, is_b = s1_kind
        asm = Signal(data.ArrayLayout(8, C))  # bytes of the word being assembled (weights or x)
        merged = Signal(data.ArrayLayout(8, C))
        for lane in range(C):
            c, byte = lane // BEAT_BYTES, lane % BEAT_BYTES
            take = (s1_chunk == c) & strb[byte]
            m.d.comb += merged[lane].eq(Mux(take, wdata[8 * byte : 8 * byte + 8], asm[lane]))

        s2_valid, s2_bad, s2_kind = Signal(), Signal(), Signal(4)  # kind: one-hot w, x, y, b
        s2_we, s2_word, s2_example, s2_data = (
            Signal(),
            Signal(range(max(cfg.memory_words, cfg.input_words, 2))),  # a weight or a batch word
            Signal(range(B)),
            Signal(data.ArrayLayout(8, C)),
        )
        s2_label, s2_bias, s2_out = Signal(range(O)), Signal(signed(32)), Signal(range(max(cfg.total_outputs, 2)))
        m.d.sync += [
            s2_valid.eq(axi.wr_valid),
            s2_bad.eq(axi.wr_valid & ~s1_ok),
            s2_kind.eq(Mux(axi.wr_valid & s1_ok, s1_kind, 0)),
            s2_word.eq(Mux(is_x, f.x_word, f.w_word)),
            s2_example.eq(Mux(is_x, f.x_example, f.entry)),
            s2_data.eq(merged),
            s2_label.eq(wdata[:8]),
            s2_bias.eq(wdata[:32]),
            s2_out.eq(f.entry),
            s2_we.eq(s1_commit | is_y | is_b),
        ]
        with m.If(axi.wr_valid & s1_ok & (is_w | is_x)):
            m.d.sync += asm.eq(Mux(s1_commit, 0, merged))
        batch_kind, idle_kind = s2_kind[1] | s2_kind[2], s2_kind[0] | s2_kind[3]
        refused = batch_kind & ~eng.load_ready
        m.d.comb += axi.wr_err.eq(s2_valid & (s2_bad | refused | (idle_kind & eng.busy)))
        error = Signal()
        with m.If(ctrl[CONTROL_BITS["CLEAR_ERROR"]]):
            m.d.sync += error.eq(0)
        with m.If(refused):
            m.d.sync += error.eq(1)
        m.d.comb += [
            eng.w_wdata.eq(s2_data),
            eng.w_we.eq(s2_kind[0] & s2_we),
            eng.x_example.eq(s2_example),
            eng.x_word.eq(s2_word),
            eng.x_wdata.eq(s2_data),
            eng.x_we.eq(s2_kind[1] & s2_we),
            eng.y_example.eq(s2_example),
            eng.y_label.eq(s2_label),
            eng.y_we.eq(s2_kind[2]),
        ]
        if has_bias:
            m.d.comb += [eng.b_addr.eq(s2_out), eng.b_wdata.eq(s2_bias), eng.b_we.eq(s2_kind[3])]
        return f, is_w, error

    def _read_path(self, m, platform, bmap, eng, axi, f, is_w):
        """The read path: R0 (the front end's request registers) -> engine read ports -> aligned answer."""
        cfg = bmap.config
        C, B, O = cfg.array.cols, cfg.array.batch, cfg.outputs
        chunks = C // BEAT_BYTES
        slot_bits = bmap.slot_bits
        win = {name: i for i, name in enumerate(WINDOW_NAMES)}
        raddr = axi.rd_addr
        r_window, r_off = raddr[slot_bits : slot_bits + 3], raddr[:slot_bits]
        r_word, r_chunk = r_off[_log2(C) :], r_off[3 : _log2(C)] if chunks > 1 else Const(0, 1)
        r_entry = r_off[3:]
        os_, es = _log2(bmap.output_stride), _log2(bmap.example_stride)
        l_out, l_ex, l_pas, l_bank = (
            (r_entry[:os_] if os_ else Const(0, 1)),
            r_entry[os_ : os_ + es],
            r_entry[os_ + es],
            r_entry[os_ + es + 1],
        )
        l_ok = (l_ex < B) & (r_entry[os_ + es + 2 :] == 0)  # outputs >= O are row padding: they read 0
        rec, lane = r_off[5:], r_off[3:5]
        r_is = {name: r_window == win[name] for name in ("weights", "logits", "steps")}
        r_ok = Mux(
            r_is["weights"],
            (r_word < cfg.memory_words) & ~eng.busy,
            Mux(r_is["logits"], l_ok, Mux(r_is["steps"], rec < STEP_LOG_DEPTH, 0)),
        )
        # weights: the host port addresses the memory while idle (writes and reads never overlap: the front end runs
        # one burst at a time), from a register of its own: the S2 weight word of a write beat, else the word of the
        # read request (taken from ``rd_addr_next``, so it equals ``r_word``), so the memory's address starts at a
        # flip-flop (the rd_addr -> mux -> weight DP16KD address path limited the rt-mlp trainer top on ECP5)
        host_w_addr = Signal.like(eng.w_addr, name="host_w_addr")
        m.d.sync += host_w_addr.eq(Mux(axi.wr_valid & is_w, f.w_word, _beat_fields(bmap, axi.rd_addr_next).w_word))
        m.d.comb += eng.w_addr.eq(host_w_addr)
        m.d.comb += [
            eng.logit_bank.eq(l_bank),
            eng.logit_pass.eq(l_pas),
            eng.logit_example.eq(l_ex),
            eng.logit_output.eq(l_out),
        ]
        # the step log: L+, L-, g, bank per step
        log_shape = data.StructLayout({"loss_plus": LOSS_BITS, "loss_minus": LOSS_BITS, "g": signed(G_BITS), "bank": 1})
        if is_ecp5(platform):  # DP16KD with its output register: the row two cycles after its address
            log_r, log_w = ebr_memory(m, "step_log", log_shape, STEP_LOG_DEPTH)
            log_row = log_r.data
        else:  # the memory, then the row registered as read (a block RAM's clock-to-out is followed by no logic)
            m.submodules.step_log = step_log = Memory(shape=log_shape, depth=STEP_LOG_DEPTH, init=[])
            log_w, log_r = step_log.write_port(), step_log.read_port(transparent_for=())
            log_row = Signal.like(log_r.data, name="r_log_row_1")
            m.d.sync += log_row.eq(log_r.data)
        m.d.comb += [
            log_w.addr.eq(eng.steps_done - 1),
            log_w.en.eq(eng.step_done),
            log_w.data.loss_plus.eq(eng.loss_plus),
            log_w.data.loss_minus.eq(eng.loss_minus),
            log_w.data.g.eq(eng.g_used),
            log_w.data.bank.eq(eng.last_bank),
            log_r.addr.eq(rec),
        ]
        # align: the step log's row after 2 cycles (the memory, its row register), weights after W_READ_LATENCY, logits
        # after LOGIT_READ_LATENCY
        L = LOGIT_READ_LATENCY
        kind_t = [Signal(2, name=f"r_kind_{i}") for i in range(L)]  # 0 weights, 1 logits, 2 steps, 3 bad
        pad_t = [Signal(name=f"r_pad_{i}") for i in range(L)]  # a logit row's padding: reads 0
        sel_t = [Signal(max(2, _log2(max(chunks, 2))), name=f"r_sel_{i}") for i in range(L)]
        m.d.sync += [
            kind_t[0].eq(Mux(~r_ok, 3, Mux(r_is["weights"], 0, Mux(r_is["logits"], 1, 2)))),
            sel_t[0].eq(Mux(r_is["steps"], lane, r_chunk)),
            pad_t[0].eq(r_is["logits"] & (l_out >= O)),
        ]
        for i in range(1, L):
            m.d.sync += [kind_t[i].eq(kind_t[i - 1]), sel_t[i].eq(sel_t[i - 1]), pad_t[i].eq(pad_t[i - 1])]
        assert W_READ_LATENCY == 2 <= L
        # the step log's row (two cycles after the request), its word selected beside the weights' chunk: both reach
        # r_early_2, three cycles after the request
        log_words = [log_row.loss_plus, log_row.loss_minus, _sext(log_row.g, 64), log_row.bank]
        early = Signal(64)  # weights (W_READ_LATENCY) / step log (its row register), two cycles after the request
        w_chunks = [eng.w_rdata.as_value()[64 * c : 64 * c + 64] for c in range(chunks)]
        m.d.comb += early.eq(Mux(kind_t[1] == 0, _select(sel_t[1], w_chunks), _select(sel_t[1], log_words)))
        delayed = early
        for i in range(2, L):
            reg = Signal(64, name=f"r_early_{i}")
            m.d.sync += reg.eq(delayed)
            delayed = reg
        answer, answer_err = Signal(64), Signal()
        logit_word = Mux(pad_t[L - 1], 0, Cat(eng.logit, _sext(eng.logit_q, 32)))
        m.d.sync += [answer.eq(Mux(kind_t[L - 1] == 1, logit_word, delayed)), answer_err.eq(kind_t[L - 1] == 3)]
        m.d.comb += [axi.rd_data.eq(answer), axi.rd_err.eq(answer_err)]

    def _status(self, m, bmap, eng, regs, error):
        """Status, interrupts, identification."""
        ctrl = regs.CONTROL
        done_prev, pending, irq_enable = Signal(), Signal(2), regs.IRQ_ENABLE
        m.d.sync += done_prev.eq(eng.done)
        set_bits = Cat(eng.done & ~done_prev, eng.step_done)
        ack = Cat(ctrl[CONTROL_BITS["ACK_DONE"]], ctrl[CONTROL_BITS["ACK_STEP"]])
        m.d.sync += [pending.eq((pending & ~ack) | set_bits), self.irq.eq((pending & irq_enable).any())]
        assert IRQ_BITS == {"DONE": 0, "STEP": 1}
        status = Signal(16)
        bits = {
            "BUSY": eng.busy,
            "DONE": eng.done,
            "LOAD_READY": eng.load_ready,
            "LOAD_BANK": eng.load_bank,
            "ERROR": error,
            "LAST_BANK": eng.last_bank,
            "IRQ_DONE": pending[0],
            "IRQ_STEP": pending[1],
        }
        for name, value in bits.items():
            m.d.comb += status[STATUS_BITS[name]].eq(value)
        m.d.comb += status[STATUS_BITS["QUEUED"] : STATUS_BITS["QUEUED"] + 2].eq(eng.queued)
        m.d.comb += [
            regs.ID.eq(HOST_ID),
            regs.VERSION.eq(ENGINE_MAP_VERSION),
            regs.SHAPE.eq(bmap.shape_word()),
            regs.BATCH.eq(bmap.batch_word()),
            regs.STATUS.eq(status),
            regs.STEPS_DONE.eq(eng.steps_done),
            regs.LOSS_PLUS_LO.eq(eng.loss_plus[:32]),
            regs.LOSS_PLUS_HI.eq(eng.loss_plus[32:]),
            regs.LOSS_MINUS_LO.eq(eng.loss_minus[:32]),
            regs.LOSS_MINUS_HI.eq(eng.loss_minus[32:]),
            regs.G_USED.eq(eng.g_used),
            regs.CYCLES.eq(eng.cycles),
            regs.WAIT_CYCLES.eq(eng.wait_cycles),
        ]
        m.d.comb += self.leds.eq(Cat(eng.busy, eng.done, eng.load_ready, error, self.irq, eng.steps_done[:3]))


def _sext(value, bits: int):
    """``value`` (signed) sign-extended to ``bits``."""
    v = value.as_signed()
    return Cat(v, v[-1].replicate(bits - len(v)))


def _select(index, values):
    """``values[index]`` as a mux chain (the last value past the end)."""
    out = values[-1]
    for i in reversed(range(len(values) - 1)):
        out = Mux(index == i, values[i], out)
    return out
