"""The network engine's loss and g units (``hw.engine.net_engine``): the on-chip hinge loss of the logits as they
leave the array (``loss_unit``, ``LOSS_LATENCY`` registers) and g from the two losses (``g_unit``, ``G_LATENCY``
registers), each on the engine's Module in the order the engine always built them (the Verilog is unchanged)."""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Mux, Signal, signed, unsigned

from pezo.golden.engine.int8 import ACC_BITS
from pezo.golden.engine.loss import G_MODE_CODES, LOSS_BITS
from pezo.golden.engine.zo_engine import G_BITS, G_MAX, G_MIN
from pezo.hw.engine.pe_array import saturate, scaled, tree_sum

LOSS_LATENCY = 8
"""Cycles from the last logit in the logit memory to the final loss: label read, "is the label", label/best
registers, best - label, hinge term, the row sum's two halves, accumulate (``loss_unit``)."""
G_LATENCY = 3
"""Registers between the final losses and g: the rounded difference ((L+ + half) - L-, ``L+ + half`` registered
beforehand), the shift by ``g_shift``'s low ``G_SHIFT_SPLIT`` bits, the shift by the rest."""
G_SHIFT_SPLIT = 3
"""Low bits of ``g_shift`` (0..47) in g's first shift register: two 8-way shifts, not one 48-way barrel shifter."""


def greater(a, b):
    """``a > b`` of two signed values as the sign bit of ``b - a`` at one bit past the wider operand: one carry
    chain whose top sum bit is the answer (Yosys's ``>`` on ECP5 adds a carry-out cell and the overflow LUTs)."""
    return (b.as_signed() - a.as_signed())[-1]


def loss_unit(m, cfg, pe, out_tag, forward_valid, y_read, rp, ctl, tail_memories=None):
    """Per row: the label's logit and the running max of the others over a tile's outputs (they leave
    the array in output order), the hinge term after the last output, the sum over rows, a loss per
    pass (``golden.engine.loss``). With the tail: the running maximum's index (the strongest rival),
    and after each tile of the -epsilon (or plain) pass the tile's hinge state (``bp_tail``).
    ``LOSS_LATENCY`` registers, one carry chain each: the logits and the label (read), "is the label" per
    row, the label (less the margin) / best registers, margin + best - label, the hinge term (a mux by the sign),
    the two halves of the row sum, the loss."""
    R, T, O = cfg.array.rows, cfg.array.tiles, cfg.outputs
    margin, loss, clear_loss = ctl.margin, ctl.loss, ctl.clear_loss
    m.d.comb += y_read.addr.eq(scaled(rp, T) + out_tag.tile)
    v1, z1, t1 = Signal(name="loss_valid_1"), Signal.like(pe.sums), Signal.like(out_tag)
    m.d.sync += [v1.eq(forward_valid & ~out_tag.hidden), z1.eq(pe.sums), t1.eq(out_tag)]
    lowest = -(1 << (ACC_BITS - 1))
    # per row, beside z1: z1 > the logit before it (z1b), and z1 != lowest -- compares of the array's sums,
    # registered, so the running maximum's compare below has one carry chain and the mux behind it
    rises = [Signal(name=f"above_previous_{r}") for r in range(R)]
    not_lowest = [Signal(name=f"not_lowest_{r}") for r in range(R)]
    m.d.sync += [rises[r].eq(greater(pe.sums[r], z1[r])) for r in range(R)]
    m.d.sync += [not_lowest[r].eq(pe.sums[r] != lowest) for r in range(R)]
    # stage 1b: the label read compared with the output index, per row (and the label kept for the tail)
    v1b, z1b, t1b = Signal(name="loss_valid_1b"), Signal.like(pe.sums), Signal.like(out_tag)
    is_label = [Signal(name=f"is_label_{r}") for r in range(R)]
    label_1b = [Signal(range(O), name=f"label_1b_{r}") for r in range(R)]
    m.d.sync += [v1b.eq(v1), z1b.eq(z1), t1b.eq(t1)]
    m.d.sync += [is_label[r].eq(t1.o == y_read.data[r]) for r in range(R)]
    m.d.sync += [label_1b[r].eq(y_read.data[r]) for r in range(R)]
    first, last = Signal(name="loss_first"), Signal(name="loss_last")
    m.d.sync += [first.eq(t1.o == 0), last.eq(t1.o == O - 1)]
    # stage 2: the label's logit and the best other logit so far (registers per row)
    v2, pas2 = Signal(name="loss_valid_2"), Signal()
    m.d.sync += [v2.eq(v1b & last), pas2.eq(t1b.pas)]
    v3, pas3 = Signal(name="loss_valid_3"), Signal()
    m.d.sync += [v3.eq(v2), pas3.eq(pas2)]
    terms = [Signal(unsigned(ACC_BITS + 2), name=f"hinge_{r}") for r in range(R)]
    labels, rivals = [], []
    for r in range(R):
        z = z1b[r]
        # the label's logit minus the margin: the hinge term margin + best - label is then one subtract
        label_logit = Signal(signed(ACC_BITS + 2), name=f"label_less_margin_{r}")
        best = Signal(signed(ACC_BITS), name=f"best_other_{r}")
        # "z > best" one stage early, against the best this cycle's update leaves (three compares side by
        # side from registers, a mux by this cycle's update), so no carry chain drives the registers' enable
        above = Signal(name=f"above_best_{r}")
        takes_z = Signal(name=f"takes_z_{r}")
        m.d.comb += takes_z.eq(v1b & ~is_label[r] & (first | above))
        m.d.sync += above.eq(
            Mux(takes_z, rises[r], Mux(v1b & is_label[r] & first, not_lowest[r], greater(z1[r], best)))
        )
        with m.If(v1b & is_label[r]):
            m.d.sync += label_logit.eq(z - margin)
        with m.If(takes_z):
            m.d.sync += best.eq(z)
            if ctl.bp is not None:
                rival = Signal(range(O), name=f"rival_{r}")
                m.d.sync += rival.eq(t1b.o)
        with m.Elif(v1b & is_label[r] & first):
            m.d.sync += best.eq(lowest)
        if ctl.bp is not None:  # the state of the tile: label (at its last output), rival (one later)
            label_q, rival_q = Signal(range(O), name=f"label_q_{r}"), Signal(range(O), name=f"rival_q_{r}")
            label_3, rival_3 = Signal(range(O), name=f"label_3_{r}"), Signal(range(O), name=f"rival_3_{r}")
            with m.If(v1b & last):
                m.d.sync += label_q.eq(label_1b[r])
            with m.If(v2):
                m.d.sync += rival_q.eq(rival)
            m.d.sync += [label_3.eq(label_q), rival_3.eq(rival_q)]
            labels.append(label_3)
            rivals.append(rival_3)
        # stage 3 (after a tile's last output): margin + best - label; stage 4: the hinge term max(that, 0),
        # by its sign bit alone (no carry chain)
        term = Signal(signed(ACC_BITS + 3), name=f"hinge_raw_{r}")
        m.d.sync += term.eq(best - label_logit)
        m.d.sync += terms[r].eq(Mux(term[-1], 0, term))
    v4, pas4 = Signal(name="loss_valid_4"), Signal()
    m.d.sync += [v4.eq(v3), pas4.eq(pas3)]
    if ctl.bp is not None:
        tm = tail_memories
        tiles = [t1b.tile]
        for stage in range(2, 5):
            t = Signal.like(t1b.tile, name=f"loss_tile_{stage}")
            m.d.sync += t.eq(tiles[-1])
            tiles.append(t)
        m.d.comb += [tm.st_write.addr.eq(tiles[-1]), tm.st_write.en.eq(v4 & pas4)]
        for r in range(R):
            m.d.comb += [
                tm.st_write.data[r].label.eq(labels[r]),
                tm.st_write.data[r].rival.eq(rivals[r]),
                tm.st_write.data[r].active.eq(terms[r] != 0),
            ]
    # stages 5-6: the sum over the rows in two halves of the adder tree; stage 7: the loss of the pass
    half_rows = (R + 1) // 2
    partial = [Signal(unsigned(LOSS_BITS), name=f"loss_rows_{i}") for i in range(2)]
    m.d.sync += [partial[0].eq(tree_sum(terms[:half_rows])), partial[1].eq(tree_sum(terms[half_rows:] or [0]))]
    total, v5, pas5, v6, pas6 = Signal(unsigned(LOSS_BITS)), Signal(), Signal(), Signal(), Signal()
    m.d.sync += [total.eq(partial[0] + partial[1]), v5.eq(v4), pas5.eq(pas4), v6.eq(v5), pas6.eq(pas5)]
    for s in range(2):
        with m.If(clear_loss):
            m.d.sync += loss[s].eq(0)
        with m.Elif(v6 & (pas6 == s)):
            m.d.sync += loss[s].eq(loss[s] + total)


def g_unit(m, ctl):
    """g from the two losses, ``G_LATENCY`` registers behind them: drives ``ctl.g_formed`` (``g_mode``
    sign or scaled; 0 in host mode), read by the controller in FORWARD_DRAIN's last cycle."""
    loss, g_shift, g_lr, mode = ctl.loss, ctl.g_shift, ctl.g_lr, ctl.mode
    # round_shift(L+ - L-, s) = ((L+ + half) - L-) >> s: L+ is final a whole pass before L- (the +epsilon pass
    # runs first), so L+ + half is a register of its own beside the loss and the last loss meets one carry chain
    half, plus_half = (
        Signal(unsigned(LOSS_BITS), name="g_half"),
        Signal(unsigned(LOSS_BITS + 1), name="g_plus_half"),
    )
    m.d.sync += [half.eq((Const(1, LOSS_BITS) << g_shift) >> 1), plus_half.eq(loss[0] + half)]
    # the compares beside the difference, -g_lr in a register: the sign's mux starts at flip-flops
    above, below = Signal(name="loss_above"), Signal(name="loss_below")
    minus_lr = Signal.like(g_lr, name="g_lr_minus")
    rounded = Signal(signed(LOSS_BITS + 2), name="g_rounded")
    m.d.sync += [
        rounded.eq(plus_half - loss[1]),
        above.eq(greater(loss[0], loss[1])),
        below.eq(greater(loss[1], loss[0])),
        minus_lr.eq(-g_lr),
    ]
    # the shift over two registers, by g_shift's low G_SHIFT_SPLIT bits, then by the rest (an arithmetic shift
    # composes): two 8-way shifters, not one 48-way
    low, sign_g = Signal(signed(LOSS_BITS + 2), name="g_shifted_low"), Signal(signed(G_BITS), name="g_sign")
    m.d.sync += [
        low.eq(rounded >> g_shift[:G_SHIFT_SPLIT]),
        sign_g.eq(Mux(above, g_lr, Mux(below, minus_lr, 0))),
    ]
    scaled, sign_g2 = Signal(signed(LOSS_BITS + 2), name="g_scaled"), Signal.like(sign_g, name="g_sign_2")
    m.d.sync += [scaled.eq(low >> Cat(Const(0, G_SHIFT_SPLIT), g_shift[G_SHIFT_SPLIT:])), sign_g2.eq(sign_g)]
    sign_g = sign_g2
    m.d.comb += ctl.g_formed.eq(
        Mux(
            mode == G_MODE_CODES["sign"],
            sign_g,
            Mux(mode == G_MODE_CODES["scaled"], saturate(scaled, G_MIN, G_MAX), 0),
        )
    )
