"""The ZO engine (twin of ``golden.engine.zo_engine``): weight memory -> perturbation unit -> R x C INT8 MAC
array, driven by one controller, with in-place update by replay.

Datapath, one weight word (C weights) per cycle, no stage holding more than one block RAM read, one multiplier or
one carry chain (the network engine's pipeline without its layers; ``hw.engine.net_engine``):

* issue (S0): the controller issues weight word ``o * J + j`` (and, ``ACTIVATION_READ_DELAY`` cycles later, the
  activation word ``tile * J + j``, all R rows at once) and, in a perturbed pass, consumes one stream vector;
* S1: the perturbation ``p`` (0 in plain inference; the stream negates it in the -epsilon pass) and the word's
  tags in registers; S2: the weight word in a register (``w_rdata``), ``p`` again (and clamped near the weights);
* forward -- S3 ``w + p``, S4 its clamp to int8 and the activation word, into the ``PEArray``'s input registers;
  the results leave the array ``ArrayShape.latency`` cycles later (``PRODUCT_STAGES`` products registers) and
  are written to the logit memory (``ENGINE_FORWARD_LATENCY`` from the issue);
* update -- S3..S5 the step ``round_shift(g * p, 16)`` (g: Q8.16; ``hw.engine.update``'s split product), beside
  the old word; S6 ``w - step``; S7 its clamp to int8, written back to the same word (``ENGINE_UPDATE_LATENCY``).

On ECP5 (``hw.engine.dsp.is_ecp5(platform)``) the weight and logit memories, and an activation memory of
``INPUT_EBR_MIN_WORDS`` or more, are DP16KD blocks whose output register is the S2 weight / S4 activation / host
logit-row register (``hw.engine.ebr``), and the update's partial products are MULT18X18D: the same cycles and values.

Operations (``op`` sampled with ``start`` while idle; ``busy`` until the operation is complete, then
``done`` until the next ``start``; ``cycles`` counts the busy cycles of the last operation):

* ``OP_FORWARD_ZO``: NEXT(+), the +epsilon pass over every batch tile (a REWIND(+) before each later
  tile), REWIND(-), the -epsilon passes. Logits of pass s, example b, output o in the logit memory.
* ``OP_UPDATE``: REWIND(+), one pass writing every weight back (``g`` sampled with ``start``).
* ``OP_INFER``: plain inference of every tile into the pass-0 logits; the stream is not touched.

Host ports (used while idle; ignored while busy): weight word write/read (``w_*``, read data ``W_READ_LATENCY``
cycles after the address), activation writes per example and word (``x_*``), logit read (``logit_*``: the int32
logit and ``logit_q``, its int8 requantisation by ``requant_shift``, both registered and valid
``LOGIT_READ_LATENCY`` cycles after the address; ``pe_array.logit_read``).
No perturbed weight is ever written to the weight memory: the only write path is the update.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pezo.golden.engine.int8 import ACC_BITS
from pezo.golden.engine.ops import Op
from pezo.golden.engine.zo_engine import (
    ACTIVATION_READ_DELAY,
    ENGINE_FORWARD_LATENCY,
    ENGINE_UPDATE_LATENCY,
    FORWARD_LATENCY,
    G_BITS,
    OPERAND_STAGES,
    PRODUCT_STAGES,
    WEIGHT_STAGES,
    EngineConfig,
)
from pezo.golden.rng.perturb import STREAM_BITS
from pezo.hw.component import ConfigComponent, ConfigSignature
from pezo.hw.engine.dsp import is_ecp5
from pezo.hw.engine.ebr import INPUT_EBR_MIN_WORDS, EbrRead, ebr_memory
from pezo.hw.engine.pe_array import (
    PE_LATENCY,
    PERTURBATION_NEAR_BITS,
    PERTURBED_SUM_BITS,
    SHIFT_BITS,
    ArrayShape,
    PEArray,
    clamp_int8,
    delayed,
    index_bits,
    int8_lanes,
    logit_read,
    near_perturbation,
    perturbed_sum,
    scaled,
    tag_bits,
    weight_write,
)
from pezo.hw.engine.update import STEP_STAGES, update_step
from pezo.hw.rng.perturb import PerturbationStream

OP_FORWARD_ZO, OP_UPDATE, OP_INFER = Op.FORWARD_ZO, Op.UPDATE, Op.INFER
"""The ops this engine runs (``golden.engine.ops.Op``; names kept for its drivers)."""
W_READ_LATENCY = 1 + WEIGHT_STAGES
"""Cycles from ``w_addr`` to its word on ``w_rdata`` (the memory, then the S2 weight register)."""
assert FORWARD_LATENCY == 1 + PE_LATENCY and WEIGHT_STAGES == 1 and OPERAND_STAGES == 2, "the pipeline below"
assert ENGINE_UPDATE_LATENCY == 2 + STEP_STAGES + 2, "S1, S2, the step, the difference and its clamp"


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
        m.submodules.pe = pe = PEArray(ArrayShape(R, C, tag_bits(cfg), product_stages=PRODUCT_STAGES))
        ecp5 = is_ecp5(platform)
        if ecp5:  # the blocks' output registers are the S2 weight register and the host's logit-row register
            w_read, w_write = ebr_memory(m, "weight_mem", int8_lanes(C), cfg.weight_words)
            l_read, l_write = ebr_memory(m, "logit_mem", data.ArrayLayout(signed(ACC_BITS), R), 2 * T * O)
        else:
            m.submodules.weight_mem = weight_mem = Memory(shape=int8_lanes(C), depth=cfg.weight_words, init=[])
            m.submodules.logit_mem = logit_mem = Memory(
                shape=data.ArrayLayout(signed(ACC_BITS), R), depth=2 * T * O, init=[]
            )
            w_read, w_write = weight_mem.read_port(), weight_mem.write_port()
            l_read, l_write = logit_mem.read_port(), logit_mem.write_port()
        act_shape = data.ArrayLayout(int8_lanes(C), R)
        if ecp5 and T * J >= INPUT_EBR_MIN_WORDS:  # one example's lane per block: a write enable per row
            x_read, x_write = ebr_memory(m, "act_mem", act_shape, T * J, lanes=R)
        else:
            m.submodules.act_mem = act_mem = Memory(shape=act_shape, depth=T * J, init=[])
            x_read, x_write = act_mem.read_port(), act_mem.write_port(granularity=1)

        # -- controller (issue stage S0) ----------------------------------------------------------
        op, g = Signal(2), Signal(signed(G_BITS))
        sign, tile = Signal(), Signal(range(T))
        word, j, o = Signal(range(cfg.weight_words)), Signal(range(J)), Signal(range(O))
        drain = Signal(range(max(ENGINE_FORWARD_LATENCY, ENGINE_UPDATE_LATENCY) + 1))
        perturbing, updating = op != Op.INFER, op == Op.UPDATE
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
                    with m.If(self.op == Op.INFER):
                        m.next = "RUN"
                    with m.Else():
                        m.next = "COMMAND"
            with m.State("COMMAND"):  # one stream command: NEXT opens a step, REWIND replays it
                first_pass = (op == Op.FORWARD_ZO) & (sign == 0) & (tile == 0)
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
                            m.d.sync += drain.eq(ENGINE_UPDATE_LATENCY - 1)
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
                            m.d.sync += drain.eq(ENGINE_FORWARD_LATENCY - 1)
                            m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.sync += drain.eq(drain - 1)
                with m.If(drain == 0):
                    m.d.sync += [self.busy.eq(0), self.done.eq(1)]
                    m.next = "IDLE"

        m.d.comb += [
            stream.en.eq(wanting),
            w_read.addr.eq(Mux(self.busy, word, self.w_addr)),
            x_read.addr.eq(delayed(m, scaled(tile, J) + j, ACTIVATION_READ_DELAY, "acts_addr")),
        ]

        # -- S1: the captured perturbation and the word's tags; the weight word leaves the memory -----------
        p = Signal(data.ArrayLayout(signed(STREAM_BITS), C), name="p_1")
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
        # -- S2: the weight word (also w_rdata), p and p clamped near the weights ------------------------
        w2, p2 = Signal(int8_lanes(C), name="weights_2"), Signal.like(p, name="p_2")
        p2_near = Signal(data.ArrayLayout(signed(PERTURBATION_NEAR_BITS), C), name="p_near_2")
        if isinstance(w_read, EbrRead):  # already registered in the blocks
            m.d.comb += w2.eq(w_read.data)
        else:
            m.d.sync += w2.eq(w_read.data)
        m.d.comb += self.w_rdata.eq(w2)
        m.d.sync += [p2.eq(p), *[p2_near[c].eq(near_perturbation(p[c])) for c in range(C)]]
        forward = zip((valid1 & ~update1, first1, last1, tag1), ("valid", "first", "last", "tag"))
        valid4, first4, last4, tag4 = (delayed(m, v, 3, f"forward_{n}") for v, n in forward)  # S2..S4
        # -- S3: w + p (one carry chain); S4: its clamp to int8 and the activation word --------------------
        sums3 = Signal(data.ArrayLayout(signed(PERTURBED_SUM_BITS), C), name="weight_sums_3")
        weights4, x4 = Signal(int8_lanes(C), name="weights_4"), Signal.like(x_read.data, name="acts_4")
        m.d.sync += [sums3[c].eq(perturbed_sum(w2[c], p2_near[c])) for c in range(C)]
        m.d.sync += [weights4[c].eq(clamp_int8(sums3[c])) for c in range(C)]
        if isinstance(x_read, EbrRead):  # already registered in the blocks
            m.d.comb += x4.eq(x_read.data)
        else:
            m.d.sync += x4.eq(x_read.data)
        m.d.comb += [pe.valid.eq(valid4), pe.first.eq(first4), pe.last.eq(last4), pe.tag.eq(tag4), pe.acts.eq(x4)]
        for c in range(C):
            m.d.comb += pe.weights[c].eq(weights4[c])

        # -- update: S3..S5 the step (hw.engine.update), S6 w - step, S7 its clamp, written back -------------
        valid = delayed(m, valid1 & update1, ENGINE_UPDATE_LATENCY - 1, "update_valid")  # S2..S7
        addr = delayed(m, addr1, ENGINE_UPDATE_LATENCY - 1, "update_addr")
        new = Signal(int8_lanes(C), name="update_word")
        for c in range(C):
            step, products, rounding = update_step(m, g, p[c], p2[c], c, ecp5)
            old = delayed(m, w2[c], STEP_STAGES, f"old_{c}")  # beside the step (S5)
            difference = Signal(signed(len(step) + 1), name=f"update_difference_{c}")
            m.d.sync += [*products, *rounding, difference.eq(old - step), new[c].eq(clamp_int8(difference))]
        weight_write(m, w_write, self, valid, addr, new)

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
