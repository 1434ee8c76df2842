"""The network engine controller's registers (``hw.engine.net_control``): the operands sampled with ``start``, the
decay counter, the walk over tiles, layers, outputs and words with its end flags, the stream's command registers,
the state flags, and what later stages read of them (``Control``). ``ControllerRegisters`` creates them on the
engine's Module in the order the engine always did (the Verilog is unchanged); ``NetController`` adds the FSM."""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Const, Mux, Signal, Value, signed, unsigned

from pezo.golden.engine.loss import LOSS_BITS
from pezo.golden.engine.network import LAYER_GAP, NET_FORWARD_LATENCY, NetConfig
from pezo.golden.engine.zo_engine import G_BITS, WD_EVERY_BITS
from pezo.hw.engine.bp_tail import BP_BITS_WIDTH, hidden_words
from pezo.hw.engine.conv_path import ConvPath, row_words
from pezo.hw.engine.net_loss import G_LATENCY, LOSS_LATENCY
from pezo.hw.engine.pe_array import Countdown, select

STEP_BITS = 16


@dataclass
class Control:
    """What the controller (S0) shares: the operands sampled with ``start``, the decay decision, the walk
    position of the word issued this cycle, the strobes, and the signals later stages drive for it
    (``loss``, ``g_formed``)."""

    g: Signal
    mode: Signal
    margin: Signal
    g_lr: Signal
    g_shift: Signal
    wd_shift: Signal
    decay_on: Signal
    updating: Signal
    sign: Signal
    tile: Signal
    layer: Signal
    word: Signal
    j: Signal
    o: Signal
    o_word: Signal
    o_lane: Signal
    parity: Signal
    perturbing: object
    issue: Signal
    wanting: Signal
    row_done: Signal
    last_layer: Signal
    loss: list
    clear_loss: Signal
    g_formed: Signal
    zo_end: object = None
    bp: object = None
    conv: object = None


def anonymous(*signals):
    """``signals`` as given. Created in this call's arguments, none is named by Amaranth's tracer: they keep the
    ``$signal`` / ``$like`` names in the Verilog they had as a closure's tuple assignments (whose stores the tracer
    could not see), so moving them here changed no name."""
    return signals


def one_in(at, counts):
    """``counts[at] == 1``, for an int or an expression of the layer."""
    return counts[at] == 1 if isinstance(at, int) else select(at, [Const(n == 1) for n in counts])


class ControllerRegisters:
    """The controller's registers on ``engine``'s (a ``NetEngine``) Module ``m``, and the helpers that load them
    (``decide_decay``, ``walk_start``, ``word_to``); ``control()`` is what later stages read."""

    def __init__(self, engine, m, cfg: NetConfig, stream, queue):
        self.engine, self.m, self.cfg, self.stream, self.queue = engine, m, cfg, stream, queue
        self._operands()
        self._walk()
        self._commands()
        self._state_flags()

    # -- registers ------------------------------------------------------------------------------------------

    def _operands(self):
        """The operands sampled with ``start``, the decay counter and (with the tail) the partition."""
        e, m, cfg = self.engine, self.m, self.cfg
        L, C = len(cfg.layers), cfg.array.cols
        op, g, mode = Signal(2, name="op"), Signal(signed(G_BITS), name="g"), Signal(2, name="mode")
        margin, g_lr, g_shift = anonymous(Signal.like(e.margin), Signal.like(e.g_lr), Signal.like(e.g_shift))
        wd_shift, wd_every = anonymous(Signal.like(e.wd_shift), Signal.like(e.wd_every))
        # the decay counter (golden.engine.network): kept across operations, 0 after reset; at the start of
        # each update phase the decay acts iff count + 1 >= wd_every (wd_every 0 acts as 1)
        # the counter is kept as count + 1 (init 1; at most wd_every <= 2^WD_EVERY_BITS - 1, so it fits), so the
        # decision is one compare and the next value one increment, not an add feeding a compare
        count_plus_one = Signal(unsigned(WD_EVERY_BITS), name="decay_count_plus_one", init=1)
        (decay_on,) = anonymous(Signal())
        self.op, self.g, self.mode, self.margin, self.g_lr, self.g_shift = op, g, mode, margin, g_lr, g_shift
        self.wd_shift, self.wd_every, self.count_plus_one, self.decay_on = wd_shift, wd_every, count_plus_one, decay_on

        if cfg.backprop:  # the partition C (OP_TRAIN only; other operations run full ZO) and b_BP
            split, bp_bits = Signal(range(L + 1), name="split_c"), Signal(unsigned(BP_BITS_WIDTH), name="bp_bits_q")
            zo_end = Signal(range(cfg.weight_words + 1), name="zo_end")
            m.d.comb += zo_end.eq(select(split, [sum(map(cfg.layer_weights, range(i))) // C for i in range(L + 1)]))
            full_bp, has_tail = split == 0, split != L
        else:
            split = bp_bits = None
            zo_end, full_bp, has_tail = Const(cfg.weight_words), Const(0), Const(0)
        self.split, self.bp_bits, self.zo_end, self.full_bp, self.has_tail = split, bp_bits, zo_end, full_bp, has_tail

    def _walk(self):
        """The walk over tiles, layers, outputs and words, its end flags, the drain counter and the issue's
        registers; the conv layers' walk (``ConvPath``) for a net with one."""
        from pezo.hw.engine.net_engine import OP_INFER  # the op codes stay defined in net_engine

        e, m, cfg = self.engine, self.m, self.cfg
        T, L, C = cfg.array.tiles, len(cfg.layers), cfg.array.cols
        slot_words = hidden_words(cfg)
        steps_left = Signal(unsigned(STEP_BITS))
        updating = Signal()  # the update phase of a step (or OP_UPDATE)
        sign, tile, layer = Signal(name="sign"), Signal(range(T), name="tile"), Signal(range(max(L, 2)), name="layer")
        word = Signal(range(max(cfg.weight_words, 2)))
        j = Signal(range(max(row_words(l, C) for l in cfg.layers) + 1), name="walk_j")
        o = Signal(range(max(l.outputs for l in cfg.layers) + 1), name="walk_o")
        o_word, o_lane = anonymous(Signal(range(slot_words + 1)), Signal(range(C)))
        drain = Countdown(NET_FORWARD_LATENCY + LOSS_LATENCY + G_LATENCY + LAYER_GAP, "drain")
        parity = Signal()
        # a register set with ``op`` (and the split) at start: op != INFER, and not C = 0 with the tail (after a reset:
        # op 0, split 0); the issue's decisions read it from a flip-flop
        perturbing = Signal(name="perturbing", init=OP_INFER != 0 and not cfg.backprop)
        issue, wanting = Signal(name="issue"), Signal(name="wanting")
        self.steps_left, self.updating, self.sign, self.tile, self.layer = steps_left, updating, sign, tile, layer
        self.word, self.j, self.o, self.o_word, self.o_lane = word, j, o, o_word, o_lane
        self.drain, self.parity, self.perturbing, self.issue, self.wanting = drain, parity, perturbing, issue, wanting
        # The walk's end flags (j == its row's last word, o == its layer's last output, layer == L - 1) are
        # registers kept beside the counters: each is the compare of its counter's next value, so the issue's
        # decisions start from flip-flops (the layer -> compare -> FSM path limited the engine on ECP5).
        row_lengths, out_counts = [row_words(lay, C) for lay in cfg.layers], [lay.outputs for lay in cfg.layers]
        j_last = Signal(name="walk_j_last", init=row_lengths[0] == 1)
        o_last = Signal(name="walk_o_last", init=out_counts[0] == 1)
        last_layer = Signal(name="walk_last_layer", init=L == 1)
        o_step = Signal.like(o, name="walk_o_step")  # o + 1 at o's width (an update pass runs past the outputs)
        m.d.comb += o_step.eq(o + 1)
        self.row_lengths, self.out_counts = row_lengths, out_counts
        self.j_last, self.o_last, self.last_layer, self.o_step = j_last, o_last, last_layer, o_step

        self.row_done = j_last
        self.layer_done = j_last & o_last
        # word == its last (an update pass's end) is a register beside the counter too, loaded with every load of
        # word from the compare of its next value (the word -> compare -> the update's end path limited the
        # rt-mlp trainer top on ECP5)
        self.last_word = Signal(name="walk_last_word", init=cfg.weight_words == 1)

        self.conv = self.streaming = None
        if cfg.has_conv:  # conv layers walk their patches (hw.engine.conv_path); the word advances on stream words
            self.conv = ConvPath(m, cfg, layer, issue, updating, ~e.busy)
            self.streaming = self.conv.streaming
            self.layer_done = j_last & Mux(self.conv.active, self.conv.final, o_last)

        with m.If(e.busy):
            m.d.sync += e.cycles.eq(e.cycles + 1)
        m.d.sync += e.step_done.eq(0)
        # The walk is back at its start after every pass: a forward pass ends at its last layer's last row, which
        # returns it there, and an update pass's last word does (``reset_walk``). So no other state loads the walk
        # (it starts from 0 after reset): its registers have the issue as their only enable, not the decisions of
        # IDLE, BATCH and FORWARD_DRAIN as well (those -> the walk's registers limited the rt-mlp trainer top on
        # ECP5, 7 ns of routing from the controller to the walk).
        self.reset_walk = [
            *self.word_to(0),
            j.eq(0),
            o.eq(0),
            o_word.eq(0),
            o_lane.eq(0),
            layer.eq(0),
            *self.walk_start(0),
        ]

    def _commands(self):
        """The losses and g (driven by the loss and g units), ``clear_loss`` and the stream's command registers."""
        m = self.m
        loss = [Signal(unsigned(LOSS_BITS), name=f"loss_{s}") for s in range(2)]
        clear_loss = Signal()
        g_formed = Signal(signed(G_BITS))
        self.loss, self.clear_loss, self.g_formed = loss, clear_loss, g_formed
        # The stream commands are registers set with the move into COMMAND (cleared in every other cycle), so
        # they hold in the COMMAND cycle exactly as the decode of the state did: the stream's command logic starts
        # from flip-flops placed beside it, not from the FSM's state register through its decode (the fsm_state ->
        # next/rewind -> stream.aligning path limited the engine on ECP5). Only a step's first pass (from BATCH)
        # opens with NEXT; every other entry (a later tile, the -epsilon pass, the update) is a REWIND. The REWIND is
        # two registers ORed at the stream: a pass's replay (set in RUN, at an issue) and the update's (set in IDLE
        # or FORWARD_DRAIN), so neither register's D merges the issue with the other states' decode (the
        # fsm_state / op -> command_rewind paths limited rt-mlp pregen on ECP5).
        command_next, command_rewind = Signal(name="command_next"), Signal(name="command_rewind")
        command_update = Signal(name="command_update")
        m.d.sync += [command_next.eq(0), command_rewind.eq(0), command_update.eq(0)]
        training = Signal(name="op_train")  # op == OP_TRAIN, a register set with op
        self.command_next, self.command_rewind, self.command_update = command_next, command_rewind, command_update
        self.training = training

    def _state_flags(self):
        """The flagged states' flip-flops and the batch wait's registers.

        The states whose loads lie on the engine's paths (IDLE, BATCH, RUN, FORWARD_DRAIN) are also flip-flops of
        their own, set by the moves into the state and cleared by those out of it (``goto``). Each such state's
        body runs twice: once outside the FSM under its flag with ``loads_pass`` (only the loads, so their
        enables are a LUT of flip-flops rather than a decode of the binary state register), once inside the FSM
        with ``moves_pass`` (only the moves); its conditions are the same expressions both times. On ECP5 the
        fsm_state -> issue -> command_rewind (rt-mlp), fsm_state -> start -> wait_cycles (rt-mlp pregen),
        fsm_state -> the walk (the rt-mlp trainer top) and fsm_state -> g (digits-mlp pregen) paths each limited a
        design. The batch waits are counted from registers (``batch_waiting``, the clear at ``start`` one cycle
        later, ``wait_cycles_clear``; the same totals)."""
        e, m = self.engine, self.m
        running, idle = Signal(name="running"), Signal(name="idle", init=1)
        batching, forward_draining = Signal(name="batching"), Signal(name="forward_draining")
        self.running, self.idle, self.batching, self.forward_draining = running, idle, batching, forward_draining
        self.state_flags = {"IDLE": idle, "BATCH": batching, "RUN": running, "FORWARD_DRAIN": forward_draining}
        self.current = []  # the flagged state whose moves are being written

        batch_waiting, wait_clear = Signal(name="batch_waiting"), Signal(name="wait_cycles_clear")
        m.d.sync += [
            batch_waiting.eq(0),
            wait_clear.eq(0),
            e.wait_cycles.eq(Mux(wait_clear, 0, e.wait_cycles + batch_waiting)),
        ]
        self.batch_waiting, self.wait_clear = batch_waiting, wait_clear

    # -- helpers the states' bodies use ---------------------------------------------------------------------

    def decide_decay(self, every):
        acts = self.count_plus_one >= every
        return [self.decay_on.eq(acts), self.count_plus_one.eq(Mux(acts, 1, self.count_plus_one + 1))]

    def walk_start(self, at):
        """The flags at j = o = 0 of layer ``at``."""
        L = len(self.cfg.layers)
        return [
            self.j_last.eq(one_in(at, self.row_lengths)),
            self.o_last.eq(one_in(at, self.out_counts)),
            self.last_layer.eq(at == L - 1),
        ]

    def word_to(self, value):
        """word <- value, and its flag."""
        value = Value.cast(value)
        return [self.word.eq(value), self.last_word.eq(value[: len(self.word)] == self.cfg.weight_words - 1)]

    def control(self) -> Control:
        """What later stages read: the walk position of the word issued this cycle (a conv layer's output,
        hidden-buffer word and lane from its walk), the operands, the strobes."""
        conv, o, o_word, o_lane = self.conv, self.o, self.o_word, self.o_lane
        if conv is not None:  # the tag's output (bias index, hidden-buffer word and lane) from the walk
            o, o_word, o_lane = (
                Mux(conv.active, new, old)
                for new, old in zip((conv.channel, conv.out_word, conv.out_lane), (o, o_word, o_lane))
            )
        return Control(
            self.g,
            self.mode,
            self.margin,
            self.g_lr,
            self.g_shift,
            self.wd_shift,
            self.decay_on,
            self.updating,
            self.sign,
            self.tile,
            self.layer,
            self.word,
            self.j,
            o,
            o_word,
            o_lane,
            self.parity,
            self.perturbing,
            self.issue,
            self.wanting,
            self.row_done,
            self.last_layer,
            self.loss,
            self.clear_loss,
            self.g_formed,
            self.zo_end,
            self.bp,
            conv,
        )
