"""The backprop tail's controller (``hw.engine.bp_tail``): its states in the engine's FSM (``tail_states``, entered
after the step's ZO update, or the plain pass at C = 0), their strobes (``tail_strobes``) and the state they share
with the tail's datapath (``TailControl``)."""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Mux, Signal, unsigned

from pezo.golden.engine.int8 import ACC_BITS
from pezo.golden.engine.network import BP_DRAINS
from pezo.hw.engine.bp_tail import KIND_ERROR, KIND_GRAD_MAX, KIND_GRAD_UPDATE, TailLayers, bit_width


@dataclass
class TailControl:
    """The backprop tail's controller state (``hw.engine.bp_tail``): the layer ``l``, the walk counters,
    the OR-trackers of |G| and |E| and their shifts, and the strobes of the issuing states."""

    l: Signal
    layers: TailLayers
    split: Signal
    bt: Signal
    bo: Signal
    bo_word: Signal
    bo_lane: Signal
    bj: Signal
    br: Signal
    boc: Signal
    bk: Signal
    bk_word: Signal
    bk_lane: Signal
    bword: Signal
    laddr: Signal
    g_or: Signal
    e_or: Signal
    g_shift: Signal
    e_shift: Signal
    phase: Signal
    grad: object = None
    error: object = None
    issue: object = None
    kind: object = None
    first: object = None
    last: object = None
    loading: object = None
    requantising: object = None
    error_phase: object = None


def tail_states(engine, m, cfg, fsm, split, bp_bits, drain, updating, finish_step):
    """The backprop tail's states (``hw.engine.bp_tail``), entered after the ZO update (or the plain pass
    at C = 0); returns ``TailControl``. The walk: BP_LAYER resets the gradient walk of layer ``l``;
    BP_GRAD issues its words (first pass, then the update pass); BP_LOAD / BP_ERR the error pass strip
    by strip; BP_REQ the requantisation; BP_END releases the batch and ends the step."""
    T, C, L = cfg.array.tiles, cfg.array.cols, len(cfg.layers)
    widest = max(x.outputs for x in cfg.layers)
    l = Signal(range(max(L, 2)), name="bp_layer")
    lay = TailLayers(cfg, l)
    bt = Signal(range(T), name="bp_tile")
    bo, bo_word, bo_lane = Signal(range(widest + 1), name="bp_o"), Signal(range(widest + 1)), Signal(range(C))
    bj = Signal(range(max(x.inputs // C for x in cfg.layers) + 1), name="bp_strip")
    br, boc = Signal(range(C), name="bp_row"), Signal(range(widest + 1), name="bp_block")
    bk = Signal(range(max(x.inputs for x in cfg.layers) + 1), name="bp_k")
    bk_word, bk_lane = Signal(range(max(x.inputs for x in cfg.layers) + 1)), Signal(range(C))
    bword, laddr = Signal(range(cfg.weight_words + 1), name="bp_word"), Signal(range(cfg.weight_words + 1))
    g_or, e_or = Signal(unsigned(ACC_BITS + 1), name="grad_or"), Signal(unsigned(ACC_BITS + 1), name="error_or")
    g_shift, e_shift = (
        Signal(range(ACC_BITS + 2), name="grad_shift"),
        Signal(range(ACC_BITS + 2), name="error_shift"),
    )
    phase = Signal(name="bp_update_phase")
    g_width, e_width = bit_width(m, g_or, "grad_width"), bit_width(m, e_or, "error_width")
    grad_walk = [bt.eq(0), bo.eq(0), bo_word.eq(0), bo_lane.eq(0), bj.eq(0), bword.eq(lay.offset)]

    def next_output():
        m.d.sync += [bo.eq(bo + 1), bo_lane.eq(Mux(bo_lane == C - 1, 0, bo_lane + 1))]
        with m.If(bo_lane == C - 1):
            m.d.sync += bo_word.eq(bo_word + 1)

    with m.State("BP_START"):
        m.d.sync += [updating.eq(0), l.eq(L - 1)]
        m.next = "BP_LAYER"
    with m.State("BP_LAYER"):
        m.d.sync += [g_or.eq(0), phase.eq(0), *grad_walk]
        m.next = "BP_GRAD"
    with m.State("BP_GRAD"):  # per weight word (o, j) of layer l, one issue per tile
        m.d.sync += bt.eq(bt + 1)
        with m.If(bt == T - 1):
            m.d.sync += [bt.eq(0), bword.eq(bword + 1), bj.eq(bj + 1)]
            with m.If(bj == lay.strips - 1):
                m.d.sync += bj.eq(0)
                next_output()
                with m.If(bo == lay.outputs - 1):
                    m.d.sync += drain.load(BP_DRAINS["gradient"] - 1)
                    m.next = "BP_GRAD_DRAIN"
    with m.State("BP_GRAD_DRAIN"):
        m.d.sync += drain.tick()
        with m.If(drain.zero):
            with m.If(~phase):
                m.d.sync += g_shift.eq(Mux(g_width > bp_bits, g_width - bp_bits, 0))
                with m.If(l > split):
                    m.d.sync += [e_or.eq(0), bj.eq(0), bo.eq(0), bo_word.eq(0), bo_lane.eq(0), laddr.eq(lay.offset)]
                    m.next = "BP_LOAD"
                with m.Else():
                    m.d.sync += [phase.eq(1), *grad_walk]
                    m.next = "BP_GRAD"
            with m.Elif(l > split):
                m.d.sync += [bt.eq(0), bk.eq(0), bk_word.eq(0), bk_lane.eq(0)]
                m.next = "BP_REQ"
            with m.Else():
                m.next = "BP_END"
    with m.State("BP_LOAD"):  # strip j's weight words (o, j), o = 0..O_l-1, into the block cache
        m.d.sync += laddr.eq(laddr + lay.strips)
        next_output()
        with m.If(bo == lay.outputs - 1):
            m.d.sync += [bt.eq(0), br.eq(0), boc.eq(0)]
            m.next = "BP_ERR"
    with m.State("BP_ERR"):  # per tile, input k = jC + r and output block: E[tR + r, k]
        m.d.sync += boc.eq(boc + 1)
        with m.If(boc == lay.blocks - 1):
            m.d.sync += [boc.eq(0), br.eq(br + 1)]
            with m.If(br == C - 1):
                m.d.sync += [br.eq(0), bt.eq(bt + 1)]
                with m.If(bt == T - 1):
                    m.d.sync += bt.eq(0)
                    with m.If(bj == lay.strips - 1):
                        m.d.sync += drain.load(BP_DRAINS["error"] - 1)
                        m.next = "BP_ERR_DRAIN"
                    with m.Else():
                        m.d.sync += [
                            bj.eq(bj + 1),
                            bo.eq(0),
                            bo_word.eq(0),
                            bo_lane.eq(0),
                            laddr.eq(lay.offset + bj + 1),
                        ]
                        m.next = "BP_LOAD"
    with m.State("BP_ERR_DRAIN"):
        m.d.sync += drain.tick()
        with m.If(drain.zero):
            m.d.sync += [e_shift.eq(Mux(e_width > 7, e_width - 7, 0)), phase.eq(1), *grad_walk]
            m.next = "BP_GRAD"
    with m.State("BP_REQ"):  # per tile and input k: E -> int8 error of layer l - 1
        m.d.sync += [bk.eq(bk + 1), bk_lane.eq(Mux(bk_lane == C - 1, 0, bk_lane + 1))]
        with m.If(bk_lane == C - 1):
            m.d.sync += bk_word.eq(bk_word + 1)
        with m.If(bk == lay.inputs - 1):
            m.d.sync += [bk.eq(0), bk_word.eq(0), bk_lane.eq(0), bt.eq(bt + 1)]
            with m.If(bt == T - 1):
                m.d.sync += drain.load(BP_DRAINS["requantise"] - 1)
                m.next = "BP_REQ_DRAIN"
    with m.State("BP_REQ_DRAIN"):
        m.d.sync += drain.tick()
        with m.If(drain.zero):
            m.d.sync += l.eq(l - 1)
            m.next = "BP_LAYER"
    with m.State("BP_END"):
        finish_step()

    return TailControl(
        l, lay, split, bt, bo, bo_word, bo_lane, bj, br, boc, bk, bk_word, bk_lane, bword, laddr,
        g_or, e_or, g_shift, e_shift, phase,
    )  # fmt: skip


def tail_strobes(engine, m, fsm, bp: TailControl) -> None:
    """The tail's issue strobes as expressions of the FSM (after its block) and ``bp_cycles``."""
    states = ("BP_START", "BP_LAYER", "BP_GRAD", "BP_GRAD_DRAIN", "BP_LOAD", "BP_ERR", "BP_ERR_DRAIN")
    states += ("BP_REQ", "BP_REQ_DRAIN", "BP_END")
    in_tail = Signal(name="in_tail")
    m.d.comb += in_tail.eq(Cat(*[fsm.ongoing(name) for name in states]).any())
    with m.If(in_tail):
        m.d.sync += engine.bp_cycles.eq(engine.bp_cycles + 1)
    T = engine.config.array.tiles
    bp.grad, bp.error = fsm.ongoing("BP_GRAD"), fsm.ongoing("BP_ERR")
    bp.issue = bp.grad | bp.error
    bp.kind = Mux(bp.error, KIND_ERROR, Mux(bp.phase, KIND_GRAD_UPDATE, KIND_GRAD_MAX))
    bp.first = Mux(bp.error, bp.boc == 0, bp.bt == 0)
    bp.last = Mux(bp.error, bp.boc == bp.layers.blocks - 1, bp.bt == T - 1)
    bp.loading, bp.requantising = fsm.ongoing("BP_LOAD"), fsm.ongoing("BP_REQ")
    bp.error_phase = fsm.ongoing("BP_LOAD") | bp.error | fsm.ongoing("BP_ERR_DRAIN")
