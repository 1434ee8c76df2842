"""The ZO engine (twin of ``golden.engine.zo_engine``): weight memory -> perturbation unit -> R x C INT8 MAC
array, driven by one controller, with in-place update by replay.

Datapath, one weight word (C weights) per cycle:

* issue (S0): the controller reads weight word ``o * J + j`` and activation word ``tile * J + j`` (all
  R rows at once) and, in a perturbed pass, consumes one stream vector into a register;
* S1: forward -- each weight becomes ``sat(w + p, -127, 127)`` on its way into the ``PEArray``'s input
  register (p = 0 in plain inference; the stream negates p in the -epsilon pass); update -- ``g * p``
  (g: Q8.16) into a register (the DSP's product);
* forward results leave the array ``PE_LATENCY`` cycles later and are written to the logit memory;
  update: S2 rounds (``round_shift(g * p, 16)`` into a register), S3 writes ``sat(w - step)`` back to the
  same word.

Operations (``op`` sampled with ``start`` while idle; ``busy`` until the operation is complete, then
``done`` until the next ``start``; ``cycles`` counts the busy cycles of the last operation):

* ``OP_FORWARD_ZO``: NEXT(+), the +epsilon pass over every batch tile (a REWIND(+) before each later
  tile), REWIND(-), the -epsilon passes. Logits of pass s, example b, output o in the logit memory.
* ``OP_UPDATE``: REWIND(+), one pass writing every weight back (``g`` sampled with ``start``).
* ``OP_INFER``: plain inference of every tile into the pass-0 logits; the stream is not touched.

Host ports (used while idle; ignored while busy): weight word write/read (``w_*``, read data one cycle
after the address), activation writes per example and word (``x_*``), logit read (``logit_*``: the
int32 logit and ``logit_q``, its int8 requantisation by ``requant_shift``, both registered and valid
``LOGIT_READ_LATENCY`` cycles after the address; ``pe_array.logit_read``).
No perturbed weight is ever written to the weight memory: the only write path is the update.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pezo.golden.engine.int8 import ACC_BITS, WEIGHT_MAX, WEIGHT_MIN
from pezo.golden.engine.zo_engine import FORWARD_LATENCY, G_BITS, G_FRAC_BITS, UPDATE_LATENCY, EngineConfig
from pezo.golden.rng.perturb import STREAM_BITS
from pezo.hw.component import ConfigComponent, ConfigSignature
from pezo.hw.engine.pe_array import (
    PE_LATENCY,
    SHIFT_BITS,
    ArrayShape,
    PEArray,
    index_bits,
    int8_lanes,
    logit_read,
    saturate,
    scaled,
    tag_bits,
    weight_write,
)
from pezo.hw.rng.perturb import PerturbationStream, scale_round

OP_FORWARD_ZO, OP_UPDATE, OP_INFER = 0, 1, 2
assert FORWARD_LATENCY == 1 + PE_LATENCY, "golden.engine.zo_engine.FORWARD_LATENCY must match the pipeline"


class ZOEngine(ConfigComponent):
    """The ZO engine of ``EngineConfig``; ports and semantics in the module docstring."""

    class Signature(ConfigSignature):
        config_type = EngineConfig

        def members_for(self, cfg):
            return {
                "start": In(1),
                "op": In(2),
                "g": In(signed(G_BITS)),
                "busy": Out(1),
                "done": Out(1),
                "cycles": Out(32),
                "w_addr": In(unsigned(index_bits(cfg.weight_words))),
                "w_wdata": In(int8_lanes(cfg.array.cols)),
                "w_we": In(1),
                "w_rdata": Out(int8_lanes(cfg.array.cols)),
                "x_example": In(unsigned(index_bits(cfg.array.batch))),
                "x_word": In(unsigned(index_bits(cfg.words_per_output))),
                "x_wdata": In(int8_lanes(cfg.array.cols)),
                "x_we": In(1),
                "logit_pass": In(1),
                "logit_example": In(unsigned(index_bits(cfg.array.batch))),
                "logit_output": In(unsigned(index_bits(cfg.outputs))),
                "requant_shift": In(unsigned(SHIFT_BITS)),
                "logit": Out(signed(ACC_BITS)),
                "logit_q": Out(signed(8)),
            }

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        R, C, J, O, T = cfg.array.rows, cfg.array.cols, cfg.words_per_output, cfg.outputs, cfg.array.tiles
        m.submodules.stream = stream = PerturbationStream(cfg.perturb)
        m.submodules.pe = pe = PEArray(ArrayShape(cfg.array.rows, cfg.array.cols, tag_bits(cfg)))
        m.submodules.weight_mem = weight_mem = Memory(shape=int8_lanes(C), depth=cfg.weight_words, init=[])
        m.submodules.act_mem = act_mem = Memory(shape=data.ArrayLayout(int8_lanes(C), R), depth=T * J, init=[])
        m.submodules.logit_mem = logit_mem = Memory(
            shape=data.ArrayLayout(signed(ACC_BITS), R), depth=2 * T * O, init=[]
        )
        w_read, w_write = weight_mem.read_port(), weight_mem.write_port()
        x_read, x_write = act_mem.read_port(), act_mem.write_port(granularity=1)
        l_read, l_write = logit_mem.read_port(), logit_mem.write_port()

        # -- controller (issue stage S0) ----------------------------------------------------------
        op, g = Signal(2), Signal(signed(G_BITS))
        sign, tile = Signal(), Signal(range(T))
        word, j, o = Signal(range(cfg.weight_words)), Signal(range(J)), Signal(range(O))
        drain = Signal(range(max(FORWARD_LATENCY, UPDATE_LATENCY) + 1))
        perturbing, updating = op != OP_INFER, op == OP_UPDATE
        issue, wanting = Signal(), Signal()
        last_word = word == cfg.weight_words - 1

        with m.If(self.busy):
            m.d.sync += self.cycles.eq(self.cycles + 1)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [
                        op.eq(self.op),
                        g.eq(self.g),
                        sign.eq(0),
                        tile.eq(0),
                        word.eq(0),
                        j.eq(0),
                        o.eq(0),
                        self.done.eq(0),
                        self.cycles.eq(0),
                        self.busy.eq(1),
                    ]
                    with m.If(self.op == OP_INFER):
                        m.next = "RUN"
                    with m.Else():
                        m.next = "COMMAND"
            with m.State("COMMAND"):  # one stream command: NEXT opens a step, REWIND replays it
                first_pass = (op == OP_FORWARD_ZO) & (sign == 0) & (tile == 0)
                m.d.comb += [stream.next.eq(first_pass), stream.rewind.eq(~first_pass), stream.sign.eq(sign)]
                m.next = "RUN"
            with m.State("RUN"):  # the stream's en is held while a pass wants words (it fills after a command)
                m.d.comb += [issue.eq(~perturbing | stream.valid), wanting.eq(perturbing)]
                with m.If(issue):
                    m.d.sync += [word.eq(word + 1), j.eq(Mux(j == J - 1, 0, j + 1))]
                    with m.If(j == J - 1):
                        m.d.sync += o.eq(o + 1)
                    with m.If(last_word):
                        m.d.sync += [word.eq(0), j.eq(0), o.eq(0)]
                        with m.If(updating):
                            m.d.sync += drain.eq(UPDATE_LATENCY - 1)
                            m.next = "DRAIN"
                        with m.Elif(tile != T - 1):
                            m.d.sync += tile.eq(tile + 1)
                            m.next = "RUN"
                            with m.If(perturbing):
                                m.next = "COMMAND"
                        with m.Elif(perturbing & (sign == 0)):
                            m.d.sync += [sign.eq(1), tile.eq(0)]
                            m.next = "COMMAND"
                        with m.Else():
                            m.d.sync += drain.eq(FORWARD_LATENCY - 1)
                            m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.sync += drain.eq(drain - 1)
                with m.If(drain == 0):
                    m.d.sync += [self.busy.eq(0), self.done.eq(1)]
                    m.next = "IDLE"

        m.d.comb += [
            stream.en.eq(wanting),
            w_read.addr.eq(Mux(self.busy, word, self.w_addr)),
            x_read.addr.eq(scaled(tile, J) + j),
        ]

        # -- S1: memory data, the captured perturbation and the word's tags -------------------------
        p = Signal(data.ArrayLayout(signed(STREAM_BITS), C))
        valid1, update1, first1, last1 = Signal(), Signal(), Signal(), Signal()
        tag1, addr1 = Signal(tag_bits(cfg)), Signal.like(word)
        m.d.sync += [
            valid1.eq(issue),
            update1.eq(updating),
            first1.eq(j == 0),
            last1.eq(j == J - 1),
            tag1.eq(scaled(scaled(sign, T) + tile, O) + o),
            addr1.eq(word),
            p.eq(Mux(perturbing, stream.lanes.as_value(), 0)),
        ]
        weights = w_read.data
        m.d.comb += self.w_rdata.eq(weights)
        perturbed = [saturate(weights[c] + p[c], WEIGHT_MIN, WEIGHT_MAX) for c in range(C)]
        m.d.comb += [
            pe.valid.eq(valid1 & ~update1),
            pe.first.eq(first1),
            pe.last.eq(last1),
            pe.tag.eq(tag1),
            pe.acts.eq(x_read.data),
        ]
        for c in range(C):
            m.d.comb += pe.weights[c].eq(perturbed[c])

        # -- update: S1 g * p, S2 round, S3 saturating subtract + write back -------------------------
        product_bits = G_BITS + STREAM_BITS
        products = [Signal(signed(product_bits), name=f"g_p_{c}") for c in range(C)]
        old2, old3 = Signal(int8_lanes(C)), Signal(int8_lanes(C))
        valid2, addr2, valid3, addr3 = Signal(), Signal.like(word), Signal(), Signal.like(word)
        m.d.sync += [
            valid2.eq(valid1 & update1),
            addr2.eq(addr1),
            old2.eq(weights),
            valid3.eq(valid2),
            addr3.eq(addr2),
            old3.eq(old2),
        ]
        for c in range(C):
            m.d.sync += products[c].eq(g * p[c])
        steps = [Signal(signed(product_bits - G_FRAC_BITS + 1), name=f"step_{c}") for c in range(C)]
        for c in range(C):  # round_shift(g * p, 16): round half up
            m.d.sync += steps[c].eq(scale_round(products[c], -G_FRAC_BITS))
        new = Signal(int8_lanes(C))
        for c in range(C):
            m.d.comb += new[c].eq(saturate(old3[c] - steps[c], WEIGHT_MIN, WEIGHT_MAX))
        weight_write(m, w_write, self, valid3, addr3, new)

        # -- activations (host writes) and logits (array writes, host reads) ----------------------
        m.d.comb += [
            x_write.addr.eq(scaled(self.x_example // R, J) + self.x_word),
            x_write.data.eq(self.x_wdata.as_value().replicate(R)),
        ]
        with m.If(self.x_we & ~self.busy):
            m.d.comb += x_write.en.eq(1 << (self.x_example % R))
        m.d.comb += [l_write.addr.eq(pe.out_tag), l_write.data.eq(pe.sums), l_write.en.eq(pe.out_valid)]
        l_addr = scaled(scaled(self.logit_pass, T) + self.logit_example // R, O) + self.logit_output
        logit_read(m, l_read, l_addr, self.logit_example % R, self.requant_shift, self.logit, self.logit_q)
        return m
