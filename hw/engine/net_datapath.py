"""The network engine's datapath behind the controller (``hw.engine.net_engine``): the weight and activation reads
(``activation_reads``), the issue pipeline S1..S4 from the weight memory through the perturbation into the array's
input registers (``stage_1``, ``issue_pipeline``), the bias memory (``bias_memory``) and the update pass
(``update_pass``), each on the engine's Module in the order the engine always built them (the Verilog is
unchanged)."""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Mux, Signal, signed
from amaranth.lib import data
from amaranth.lib.memory import Memory

from pezo.golden.engine.int8 import ACC_BITS
from pezo.golden.engine.network import NET_UPDATE_LATENCY, NetConfig
from pezo.golden.engine.zo_engine import ACTIVATION_READ_DELAY, OPERAND_STAGES, WEIGHT_STAGES
from pezo.golden.rng.perturb import STREAM_BITS
from pezo.hw.engine.bp_tail import hidden_slot, hidden_words, tail_operands
from pezo.hw.engine.ebr import EbrRead
from pezo.hw.engine.pe_array import (
    PERTURBATION_NEAR_BITS,
    PERTURBED_SUM_BITS,
    clamp_int8,
    delayed,
    index_bits,
    int8_lanes,
    near_perturbation,
    perturbed_sum,
    scaled,
    select,
    weight_write,
)
from pezo.hw.engine.update import update_step


def logit_row(cfg: NetConfig, parity, pas, tile, o):
    """The logit memory's row of output ``o`` of tile ``tile`` in pass ``pas`` of a forward into bank ``parity``:
    ((parity * 2 + pas) * T + tile) * O + o."""
    return scaled(scaled(parity * 2 + pas, cfg.array.tiles) + tile, cfg.outputs) + o


def tag_layout(cfg: NetConfig) -> data.StructLayout:
    """What rides along with a dot product through the array."""
    widest = max(l.outputs for l in cfg.layers)
    fields = {
        "hidden": 1,
        "layer": index_bits(len(cfg.layers)),
        "o": index_bits(widest),
        "o_word": index_bits(-(-widest // cfg.array.cols)),
        "o_lane": index_bits(cfg.array.cols),
        "pas": 1,
        "tile": index_bits(cfg.array.tiles),
        "logit_row": index_bits(4 * cfg.array.tiles * cfg.outputs),  # its logit-memory row, if a last layer's
    }
    if cfg.backprop:  # the pass kind (bp_tail.KIND_*) and a gradient word's address
        fields.update({"kind": 2, "word": index_bits(cfg.weight_words)})
    if cfg.has_conv:  # the result's 2 x 2 pool window opens / closes (hw.engine.conv_path)
        fields.update({"pool_first": 1, "pool_last": 1})
    return data.StructLayout(fields)


@dataclass
class Stage1:
    """The S1 registers the update reads (``p``, ``valid1``, ``update1``, ``addr1``) and the S2 registers
    (``p2``: ``p`` one cycle later, ``w2``: the weight word)."""

    p: Signal
    p2: Signal
    valid1: Signal
    update1: Signal
    addr1: Signal
    w2: Signal


def activation_reads(engine, m, cfg, stream, mem, queue, ctl):
    """The reads: the weight word at the issue (S0; the host's ``w_addr`` while idle) with the stream's
    ``en``; the activation word ``ACTIVATION_READ_DELAY`` cycles later (address registered that many times:
    layer 0 from the batch bank at the head of the queue, later layers from the hidden buffer), so that,
    registered as read, it meets the clamped weight word at S4."""
    T, L, J0 = cfg.array.tiles, len(cfg.layers), cfg.input_words
    x_read, h_read, bp = mem.x_read, mem.h_read, ctl.bp
    m.d.comb += stream.en.eq(ctl.wanting)
    if bp is None:
        m.d.comb += mem.w_read.addr.eq(Mux(engine.busy, ctl.word, engine.w_addr))
    x_addr = Signal.like(x_read.addr)
    tile, j = (ctl.tile, ctl.j) if bp is None else (Mux(bp.grad, bp.bt, ctl.tile), Mux(bp.grad, bp.bj, ctl.j))
    x_word = j
    if ctl.conv is not None and 0 in ctl.conv.walks:  # a conv layer 0: the patch word of the im2col'd example
        x_word = ctl.conv.walks[0]["addr"]
    m.d.comb += x_addr.eq(scaled(scaled(queue.rp, T) + tile, J0) + x_word)
    m.d.comb += x_read.addr.eq(delayed(m, x_addr, ACTIVATION_READ_DELAY, "acts_x_addr"))
    if L > 1:
        h_addr = Signal.like(h_read.addr)
        h_word = j if ctl.conv is None else Mux(ctl.conv.active, ctl.conv.addr, j)  # a conv layer's patch word
        if bp is None:
            m.d.comb += h_addr.eq(scaled(~ctl.layer[0], hidden_words(cfg)) + h_word)
        else:  # the forward's input slot, or the gradient pass's input block (layer l's input, tile t)
            layer = Mux(bp.grad, bp.l, ctl.layer)
            m.d.comb += h_addr.eq(hidden_slot(cfg, tile, (layer - 1)[: len(ctl.layer)]) + h_word)
        m.d.comb += h_read.addr.eq(delayed(m, h_addr, ACTIVATION_READ_DELAY, "acts_h_addr"))


def stage_1(m, cfg, stream, ctl):
    """S1 of the issue pipeline: the issued word's tag (a tail pass's, with the tail), its perturbation ``p`` and
    flags into registers. Returns ``p``, ``valid1``, ``update1``, ``first1``, ``last1``, ``layer0_1``, ``tag1``,
    ``addr1``."""
    C = cfg.array.cols
    tag_shape = tag_layout(cfg)
    word, layer, o = ctl.word, ctl.layer, ctl.o
    # -- S1: the weight word, the captured perturbation and the word's tag ---------------------------
    p = Signal(data.ArrayLayout(signed(STREAM_BITS), C))
    valid1, update1, first1, last1, layer0_1 = Signal(), Signal(), Signal(), Signal(), Signal()
    tag0, tag1 = Signal(tag_shape), Signal(tag_shape)
    addr1 = Signal.like(word)
    bp = ctl.bp
    m.d.comb += [
        tag0.hidden.eq(~ctl.last_layer),
        tag0.layer.eq(layer),
        tag0.o.eq(o),
        tag0.o_word.eq(ctl.o_word),
        tag0.o_lane.eq(ctl.o_lane),
        tag0.pas.eq(ctl.sign),
        tag0.tile.eq(ctl.tile),
        # the logit memory's row, (parity, pass, tile, o), formed at the issue: the memory's write address
        # leaves a flip-flop (parity flips only after the forward's last result)
        tag0.logit_row.eq(logit_row(cfg, ctl.parity, ctl.sign, ctl.tile, o)),
    ]
    if ctl.conv is not None:
        conv = ctl.conv
        m.d.comb += [
            tag0.pool_first.eq(~conv.active | conv.pool_first),
            tag0.pool_last.eq(~conv.active | conv.pool_last),
        ]
    issue, first, last = ctl.issue, ctl.j == 0, ctl.row_done
    p_next = Mux(ctl.perturbing if bp is None else ctl.perturbing & (word < ctl.zo_end), stream.lanes.as_value(), 0)
    if bp is not None:  # a tail pass's word: its kind, layer, output (gradient) or input k (error), tile
        C = cfg.array.cols
        with m.If(bp.issue):
            m.d.comb += [
                tag0.hidden.eq(0),
                tag0.layer.eq(bp.l),
                tag0.o.eq(Mux(bp.error, scaled(bp.bj, C) + bp.br, bp.bo)),
                tag0.o_word.eq(bp.bj),
                tag0.o_lane.eq(bp.br),
                tag0.pas.eq(0),
                tag0.tile.eq(bp.bt),
                tag0.kind.eq(bp.kind),
                tag0.word.eq(bp.bword),
            ]
        issue, first, last = issue | bp.issue, Mux(bp.issue, bp.first, first), Mux(bp.issue, bp.last, last)
    m.d.sync += [
        valid1.eq(issue),
        update1.eq(ctl.updating),
        first1.eq(first),
        last1.eq(last),
        layer0_1.eq(layer == 0),
        tag1.eq(tag0),
        addr1.eq(word),
        p.eq(p_next),
    ]
    return p, valid1, update1, first1, last1, layer0_1, tag1, addr1


def issue_pipeline(engine, m, cfg, stream, pe, mem, ctl):
    """S1 (``stage_1``): registers the issued word's perturbation ``p`` (0 in plain inference), flags and tag; the
    weight word leaves the memory. S2: registers the weight word (also ``w_rdata``; on ECP5 the register is the weight
    memory's output register, ``hw.engine.ebr``), ``p`` (and ``p`` clamped) and the flags. S3: ``w + p``.
    S4: ``sat(w + p)`` and the activation word (read with the address ``ACTIVATION_READ_DELAY`` cycles late),
    which drive the array's inputs (and the bias, ``bias_memory``).
    Returns ``Stage1``: the S1 registers and the S2 weight word ``w2`` the update reads."""
    C, L = cfg.array.cols, len(cfg.layers)
    tag_shape = tag_layout(cfg)
    w_read, x_read, h_read = mem.w_read, mem.x_read, mem.h_read
    layer, o = ctl.layer, ctl.o
    bp = ctl.bp
    p, valid1, update1, first1, last1, layer0_1, tag1, addr1 = stage_1(m, cfg, stream, ctl)
    # -- S2: the registered weight word + p (the conv row buffer) ------------------------------------
    w2, p2 = Signal(int8_lanes(C), name="weights_2"), Signal.like(p, name="p_2")
    p2_near = Signal(data.ArrayLayout(signed(PERTURBATION_NEAR_BITS), C), name="p_near_2")
    valid2f, first2, last2, layer0_2, tag2 = Signal(), Signal(), Signal(), Signal(), Signal(tag_shape)
    if isinstance(w_read, EbrRead):  # already registered in the blocks
        m.d.comb += w2.eq(w_read.data)
    else:
        m.d.sync += w2.eq(w_read.data)
    m.d.comb += engine.w_rdata.eq(w2)  # W_READ_LATENCY: the host's reads leave from the register
    m.d.sync += [
        p2.eq(p),
        *[p2_near[c].eq(near_perturbation(p[c])) for c in range(C)],
        valid2f.eq(valid1 & ~update1),
        first2.eq(first1),
        last2.eq(last1),
        layer0_2.eq(layer0_1),
        tag2.eq(tag1),
    ]
    sums = [perturbed_sum(w2[c], p2_near[c]) for c in range(C)]
    if ctl.conv is not None:  # a conv row's later pixels take its words from the row buffer
        sums = ctl.conv.row_buffer(m, ctl.j, sums, valid2f)
    # -- S3, S4 (OPERAND_STAGES): w + p in a register, then its clamp to int8 in the next; the activation words
    # (read ACTIVATION_READ_DELAY cycles after the issue) registered as read at S4: a block RAM's clock-to-out
    # is followed by no logic in its cycle, an add by no clamp
    sums3 = Signal(data.ArrayLayout(signed(PERTURBED_SUM_BITS), C), name="weight_sums_3")
    valid3f, first3, last3, layer0_3, tag3 = Signal(), Signal(), Signal(), Signal(), Signal(tag_shape)
    m.d.sync += [
        *[sums3[c].eq(sums[c]) for c in range(C)],
        valid3f.eq(valid2f),
        first3.eq(first2),
        last3.eq(last2),
        layer0_3.eq(layer0_2),
        tag3.eq(tag2),
    ]
    weights4 = Signal(int8_lanes(C), name="weights_4")
    x4 = Signal.like(x_read.data, name="acts_x_4")
    valid4f, first4, last4, layer0_4, tag4 = Signal(), Signal(), Signal(), Signal(), Signal(tag_shape)
    m.d.sync += [
        *[weights4[c].eq(clamp_int8(sums3[c])) for c in range(C)],
        valid4f.eq(valid3f),
        first4.eq(first3),
        last4.eq(last3),
        layer0_4.eq(layer0_3),
        tag4.eq(tag3),
    ]
    if isinstance(x_read, EbrRead):  # already registered in the blocks
        m.d.comb += x4.eq(x_read.data)
    else:
        m.d.sync += x4.eq(x_read.data)
    acts = x4.as_value()
    h4 = None
    if L > 1:
        h4 = Signal.like(h_read.data, name="acts_h_4")
        m.d.sync += h4.eq(h_read.data)
        acts = Mux(layer0_4, x4.as_value(), h4.as_value())
    if ctl.conv is not None:  # zero padding
        acts = ctl.conv.zeroed(m, acts, stages=WEIGHT_STAGES + 1 + OPERAND_STAGES)
    array_weights = [weights4[c] for c in range(C)]
    if bp is not None:  # a tail pass's operands, selected from registered reads into the array's register
        tail_weights, tail_acts, tail_pass = tail_operands(engine, m, cfg, pe, mem, bp, x4, h4)
        acts = Mux(tail_pass, tail_acts.as_value(), acts)
        array_weights = [Mux(tail_pass, tail_weights[c], weights4[c]) for c in range(C)]
    m.d.comb += [
        pe.valid.eq(valid4f),
        pe.first.eq(first4),
        pe.last.eq(last4),
        pe.tag.eq(tag4.as_value()),
        pe.acts.eq(acts),
    ]
    for c in range(C):
        m.d.comb += pe.weights[c].eq(array_weights[c])
    if any(l.bias for l in cfg.layers):
        bias_memory(engine, m, cfg, pe, layer, o, None if bp is None else bp.issue)
    return Stage1(p, p2, valid1, update1, addr1, w2)


def update_pass(engine, m, cfg, mem, ctl, s1, ecp5=False):
    """The update of an update pass, no stage holding more than one multiplier or one carry chain (and a
    compare): S3..S5 the step round_shift(g * p, 16) of each lane (``hw.engine.update``: two partial products,
    the low one rounded, their sum), from ``p``'s S2 register (``p_2``; on ECP5 the DSPs' input registers copy
    it), so nothing but ``p``'s own register follows the stream's logic. Beside it S3 holds the old word; S4 the
    decay d = ((w >> (s - 1)) + 1) >> 1 (= round_shift(w, s); ``wd_shift`` s 1..7, 0 = off; on the updates
    ``decay_on`` picks); S5 w - d; S6 w - d - step; S7 its clamp to int8, written back from that register
    (``NET_UPDATE_LATENCY`` = 7: the block RAM's write port starts at a flip-flop; the host's ``w_*`` writes
    while idle). Exact: g is written only in IDLE and FORWARD_DRAIN, both followed by COMMAND, where no word
    issues, so g has held for two cycles when a word's ``p`` is in S2 and stays until the update has drained."""
    C = cfg.array.cols
    word, w2, p, p2, wd_shift = ctl.word, s1.w2, s1.p, s1.p2, ctl.wd_shift
    w_write = mem.w_write
    # S2..S7: valid and address ride along
    valid, addr = [s1.valid1 & s1.update1], [s1.addr1]
    for stage in range(2, NET_UPDATE_LATENCY + 1):
        v, a = Signal(name=f"update_valid_{stage}"), Signal.like(word, name=f"update_addr_{stage}")
        m.d.sync += [v.eq(valid[-1]), a.eq(addr[-1])]
        valid.append(v)
        addr.append(a)
    wd_minus_1 = (wd_shift - 1)[: wd_shift.shape().width]
    decay_off = Signal(name="decay_off_3")  # with the old word's S3 register, for the decay at S4
    m.d.sync += decay_off.eq((wd_shift == 0) | ~ctl.decay_on)
    new = Signal(int8_lanes(C), name="update_word")
    for c in range(C):
        step, products, rounding = update_step(m, ctl.g, p[c], p2[c], c, ecp5)  # S3, S4..S5
        old3, old4 = Signal(signed(8), name=f"old_3_{c}"), Signal(signed(8), name=f"old_4_{c}")
        decay4, decayed = Signal(signed(8), name=f"decay_{c}"), Signal(signed(9), name=f"decayed_{c}")
        m.d.sync += products
        # the old word leaves the memory into a register first (the decay's shift and round start at S3's
        # register, not at a block RAM's output and its bank select)
        m.d.sync += [
            old3.eq(w2[c]),
            old4.eq(old3),
            decay4.eq(Mux(decay_off, 0, ((old3 >> wd_minus_1) + 1) >> 1)),
            *rounding,
            decayed.eq(old4 - decay4),
        ]
        # S6: the difference (one carry chain); S7: its clamp from the top bits
        difference = Signal(signed(len(step) + 1), name=f"update_difference_{c}")
        m.d.sync += [difference.eq(decayed - step), new[c].eq(clamp_int8(difference))]
    if ctl.bp is None:
        weight_write(m, w_write, engine, valid[-1], addr[-1], new)
    else:  # the ZO update writes layers 1..C only (the stream still replays every word); the tail's write
        engine.zo_write = (valid[-1] & (addr[-1] < ctl.zo_end), addr[-1], new)


def bias_memory(engine, m, cfg, pe, layer, o, tail_issue=None):
    """The bias memory: one int32 per output of every layer (global output order; host writes while
    idle), read with a row's first word (address ``ACTIVATION_READ_DELAY`` cycles behind the issue, like the
    activations);
    a layer without ``bias`` adds 0."""
    offsets = [sum(l.bias_size for l in cfg.layers[:i]) for i in range(len(cfg.layers))]
    m.submodules.bias_mem = bias_mem = Memory(shape=signed(ACC_BITS), depth=cfg.total_outputs, init=[])
    b_read, b_write = bias_mem.read_port(), bias_mem.write_port()
    m.d.comb += [
        b_write.addr.eq(engine.b_addr),
        b_write.data.eq(engine.b_wdata),
        b_write.en.eq(engine.b_we & ~engine.busy),
    ]
    index, uses = Signal(range(cfg.total_outputs + 1)), Signal()
    m.d.comb += [
        index.eq(select(layer, [offsets[i] + o for i in range(len(cfg.layers))])),
        uses.eq(select(layer, [int(lay.bias) for lay in cfg.layers])),
    ]
    if tail_issue is not None:  # a tail pass starts its sums from 0
        uses = uses & ~tail_issue
    read_uses = delayed(m, uses, ACTIVATION_READ_DELAY + 1, "bias_uses")
    bias4 = Signal(signed(ACC_BITS), name="bias_4")  # registered as read, with the activation words
    m.d.sync += bias4.eq(Mux(read_uses, b_read.data, 0))
    m.d.comb += [b_read.addr.eq(delayed(m, index, ACTIVATION_READ_DELAY, "bias_addr")), pe.bias.eq(bias4)]
