"""The network engine's controller (``hw.engine.net_engine``'s issue stage S0): the FSM of the operations on the
registers of ``hw.engine.net_registers`` (the operands sampled with ``start``, the walk, the decay counter).

``NetController`` builds it on the engine's Module in the order the engine always did (the Verilog is unchanged):
the registers (``ControllerRegisters``), the flagged states' loads outside the FSM (``_loads``), the FSM's moves
(``_fsm``), the strobes (``_strobes``); ``control()`` is what later stages read (``Control``). A flagged state's body
(``idle_start``, ``batch_start``, ``run_issue`` / ``pass_end``, ``forward_drain_end``) runs twice, once with
``loads_pass`` (only its loads), once with ``moves_pass`` (only its moves).
"""

from __future__ import annotations

from amaranth.hdl import Const, Mux, Signal

from pezo.golden.engine.loss import G_MODE_CODES
from pezo.golden.engine.network import LAYER_GAP, NET_FORWARD_LATENCY, NET_UPDATE_LATENCY, NetConfig
from pezo.hw.engine.bp_control import tail_states, tail_strobes
from pezo.hw.engine.net_loss import G_LATENCY, LOSS_LATENCY
from pezo.hw.engine.net_registers import ControllerRegisters, one_in
from pezo.hw.engine.pe_array import select

__all__ = ["NetController"]


class NetController(ControllerRegisters):
    """The issue stage S0 of ``engine`` (a ``NetEngine``) on its Module ``m``: reads ``queue.batch_ready``,
    ``stream.valid``, the losses and ``g_formed`` (both created here, driven by the loss and g units). Drives
    ``busy``, ``done``, ``cycles``, ``wait_cycles``, ``step_done``, ``steps_done``, ``g_used``, ``last_bank``,
    ``loss_plus``, ``loss_minus`` (and ``bp_cycles``), the stream's commands and ``en`` strobes, the queue's
    ``release``. ``control()``: the walk position of the word issued in this cycle."""

    def __init__(self, engine, m, cfg: NetConfig, stream, queue):
        super().__init__(engine, m, cfg, stream, queue)  # the registers
        self._loads()
        self._fsm()
        self._strobes()

    # -- moves ------------------------------------------------------------------------------------------------

    def goto(self, state: str):
        """A move clears the flag of the state it leaves and sets the one it enters (at most one goto per branch:
        a later one would not undo an earlier one's flag)."""
        m, current = self.m, self.current
        m.next = state
        if current and current[-1] != state:
            m.d.sync += self.state_flags[current[-1]].eq(0)
        if state in self.state_flags:
            m.d.sync += self.state_flags[state].eq(1)

    def flagged_state(self, name: str):
        """The FSM's state ``name`` with the moves of its body."""
        with self.m.State(name):
            self.current.append(name)
            self.bodies[name](self.moves_pass)
            self.current.pop()

    def loads_pass(self, loads=(), move=None):
        self.m.d.sync += loads

    def moves_pass(self, loads=(), move=None):
        if move is not None:
            move()

    def to_command(self, command: Signal):
        self.m.d.sync += command.eq(1)
        self.goto("COMMAND")

    # -- the flagged states' bodies -----------------------------------------------------------------------------

    def idle_start(self, act):
        """IDLE, at start: the operands and status registers, and the first move."""
        from pezo.hw.engine.net_engine import OP_INFER, OP_TRAIN, OP_UPDATE

        e, m, cfg = self.engine, self.m, self.cfg
        L = len(cfg.layers)
        with m.If(e.start):
            act(
                [
                    self.wait_clear.eq(1),
                    self.op.eq(e.op),
                    self.training.eq(e.op == OP_TRAIN),
                    self.perturbing.eq(e.op != OP_INFER),
                    self.g.eq(e.g),
                    self.mode.eq(Mux(e.op == OP_TRAIN, e.g_mode, 0)),
                    self.margin.eq(e.margin),
                    self.g_lr.eq(e.g_lr),
                    self.g_shift.eq(e.g_shift),
                    self.wd_shift.eq(e.wd_shift),
                    self.wd_every.eq(e.wd_every),
                    self.steps_left.eq(e.steps),
                    e.done.eq(0),
                    e.cycles.eq(0),
                    e.steps_done.eq(0),
                    e.busy.eq(1),
                    self.updating.eq(e.op == OP_UPDATE),
                    self.sign.eq(0),
                    self.tile.eq(0),
                ]
            )
            if cfg.backprop:  # a C past L runs full ZO
                train_split = Mux(e.split > L, L, e.split)
                act(
                    [
                        self.split.eq(Mux(e.op == OP_TRAIN, train_split, L)),
                        self.perturbing.eq((e.op != OP_INFER) & ~((e.op == OP_TRAIN) & (train_split == 0))),
                        self.bp_bits.eq(e.bp_bits),
                        e.bp_cycles.eq(0),
                    ]
                )
            with m.If(e.op == OP_UPDATE):
                act(self.decide_decay(e.wd_every), lambda: self.to_command(self.command_update))  # updating: REWIND
            with m.Elif((e.op == OP_TRAIN) & (e.steps == 0)):
                act(move=lambda: self.goto("FINISH"))
            with m.Else():
                act(move=lambda: self.goto("BATCH"))

    def batch_start(self, act):
        """BATCH: a step begins when its batch is in the queue."""
        from pezo.hw.engine.net_engine import OP_INFER

        m = self.m
        with m.If(self.queue.batch_ready):
            act([self.updating.eq(0), self.sign.eq(0), self.tile.eq(0)])
            with m.If(self.op == OP_INFER):
                act(move=lambda: self.goto("RUN"))
            if self.cfg.backprop:
                with m.Elif(self.full_bp):  # C = 0: one plain pass, as the -epsilon pass (its logits and loss)
                    act([self.sign.eq(1)], lambda: self.goto("RUN"))
            with m.Else():
                act(move=lambda: self.to_command(self.command_next))  # not updating, sign 0, tile 0: NEXT
        with m.Else():
            act([self.batch_waiting.eq(1)])

    def run_issue(self, act):
        """RUN, at an issue: the walk advances; a pass's end moves on (``pass_end``)."""
        m, C = self.m, self.cfg.array.cols
        word, j, o, o_lane, o_word, layer = self.word, self.j, self.o, self.o_lane, self.o_word, self.layer
        row_done, row_lengths, out_counts, o_step = self.row_done, self.row_lengths, self.out_counts, self.o_step
        with m.If(self.issue):
            act(
                [
                    *self.word_to(word + 1 if self.conv is None else Mux(self.streaming, word + 1, word)),
                    j.eq(Mux(row_done, 0, j + 1)),
                    self.j_last.eq(
                        Mux(
                            row_done,
                            one_in(layer, row_lengths),
                            select(layer, [j == n - 2 if n > 1 else Const(0) for n in row_lengths]),
                        )
                    ),
                ]
            )
            with m.If(row_done):
                act(
                    [
                        o.eq(o_step),
                        self.o_last.eq(select(layer, [o_step == n - 1 for n in out_counts])),
                        o_lane.eq(Mux(o_lane == C - 1, 0, o_lane + 1)),
                    ]
                )
                with m.If(o_lane == C - 1):
                    act([o_word.eq(o_word + 1)])
            self.pass_end(act)

    def pass_end(self, act):
        """RUN, at an issue, after the walk's advance: the end of an update pass, of a layer, of a tile, of a
        pass."""
        m, T = self.m, self.cfg.array.tiles
        drain, layer, tile, sign = self.drain, self.layer, self.tile, self.sign
        with m.If(self.updating):
            with m.If(self.last_word):
                act([*drain.load(NET_UPDATE_LATENCY - 1), *self.reset_walk], lambda: self.goto("UPDATE_DRAIN"))
        with m.Elif(self.layer_done):
            act([self.j.eq(0), self.o.eq(0), self.o_word.eq(0), self.o_lane.eq(0)])
            with m.If(~self.last_layer):
                next_layer = [layer.eq(layer + 1), *drain.load(LAYER_GAP - 1), *self.walk_start(layer + 1)]
                act(next_layer, lambda: self.goto("GAP"))
            with m.Else():
                act([layer.eq(0), *self.word_to(0), *self.walk_start(0)])
                with m.If(tile != T - 1):
                    act([tile.eq(tile + 1)])
                    with m.If(self.perturbing):
                        act(move=lambda: self.to_command(self.command_rewind))  # tile > 0: REWIND
                    with m.Else():
                        act(move=lambda: self.goto("RUN"))
                with m.Elif(self.perturbing & (sign == 0)):
                    act([sign.eq(1), tile.eq(0)], lambda: self.to_command(self.command_rewind))  # sign 1: REWIND
                with m.Else():
                    forward_drain = drain.load(NET_FORWARD_LATENCY + LOSS_LATENCY + G_LATENCY - 1)
                    act(forward_drain, lambda: self.goto("FORWARD_DRAIN"))

    def forward_drain_end(self, act):
        """FORWARD_DRAIN: the pipeline drains; then the losses, g and the update."""
        e, m, cfg = self.engine, self.m, self.cfg
        act(self.drain.tick())
        with m.If(self.drain.zero):
            act(
                [
                    self.parity.eq(~self.parity),
                    e.last_bank.eq(self.parity),
                    e.loss_plus.eq(self.loss[0]),
                    e.loss_minus.eq(self.loss[1]),
                ]
            )
            if cfg.backprop:
                with m.If(self.training & self.full_bp):
                    act([self.g.eq(0)], lambda: self.goto("BP_START"))
            with (m.Elif if cfg.backprop else m.If)(self.training):
                update = [
                    self.g.eq(Mux(self.mode == G_MODE_CODES["host"], self.g, self.g_formed)),
                    self.updating.eq(1),
                    self.sign.eq(0),
                    self.tile.eq(0),
                    *self.decide_decay(self.wd_every),
                ]
                act(update, lambda: self.to_command(self.command_update))  # updating: REWIND
            with m.Else():
                act(move=lambda: self.goto("FINISH"))

    # -- the loads, the FSM, the strobes ------------------------------------------------------------------------

    def _loads(self):
        """The flagged states' loads, outside the FSM under their flags."""
        self.bodies = {
            "IDLE": self.idle_start,
            "BATCH": self.batch_start,
            "RUN": self.run_issue,
            "FORWARD_DRAIN": self.forward_drain_end,
        }
        for name, body in self.bodies.items():
            with self.m.If(self.state_flags[name]):
                body(self.loads_pass)

    def finish_step(self):
        """A TRAIN step's end: ``step_done`` and its counters; FINISH after the last step, else BATCH."""
        e, m = self.engine, self.m
        m.d.sync += [
            e.step_done.eq(1),
            e.steps_done.eq(e.steps_done + 1),
            e.g_used.eq(self.g),
            self.steps_left.eq(self.steps_left - 1),
        ]
        with m.If(self.steps_left == 1):  # one move per branch: goto's flags follow its moves
            self.goto("FINISH")
        with m.Else():
            self.goto("BATCH")

    def _fsm(self):
        """The FSM: the flagged states' moves, COMMAND, GAP, UPDATE_DRAIN, FINISH and the tail's states."""
        e, m, cfg, drain = self.engine, self.m, self.cfg, self.drain
        with m.FSM(init="IDLE") as fsm:
            self.flagged_state("IDLE")
            self.flagged_state("BATCH")
            with m.State("COMMAND"):  # NEXT opens a step, REWIND replays it
                self.goto("RUN")
            self.flagged_state("RUN")
            with m.State("GAP"):  # the last outputs of a layer reach its buffer before the next layer reads them
                m.d.sync += drain.tick()
                with m.If(drain.zero):
                    self.goto("RUN")
            self.flagged_state("FORWARD_DRAIN")

            with m.State("UPDATE_DRAIN"):
                m.d.sync += drain.tick()
                with m.If(drain.zero):
                    if cfg.backprop:
                        with m.If(self.training & self.has_tail):
                            self.goto("BP_START")
                    with (m.Elif if cfg.backprop else m.If)(self.training):
                        self.finish_step()
                    with m.Else():
                        m.d.sync += e.g_used.eq(self.g)
                        self.goto("FINISH")
            with m.State("FINISH"):
                m.d.sync += [e.busy.eq(0), e.done.eq(1)]
                self.goto("IDLE")
            self.bp = None
            if cfg.backprop:
                self.bp = tail_states(e, m, cfg, fsm, self.split, self.bp_bits, drain, self.updating, self.finish_step)
        self.fsm = fsm

    def _strobes(self):
        """Strobes of the controller as plain expressions of its registers (continuous assignments: 4-state
        simulators evaluate them from time 0)."""
        e, m, cfg, fsm, conv = self.engine, self.m, self.cfg, self.fsm, self.conv
        running, perturbing, stream = self.running, self.perturbing, self.stream
        if self.bp is not None:
            tail_strobes(e, m, fsm, self.bp)
        if conv is not None:
            m.d.comb += conv.running.eq(running)
        forward_end = self.forward_draining & self.drain.zero
        m.d.comb += [
            stream.next.eq(self.command_next),
            stream.rewind.eq(self.command_rewind | self.command_update),
            stream.sign.eq(self.sign),
            self.wanting.eq(running & perturbing if conv is None else running & perturbing & self.streaming),
            self.issue.eq(
                running & (~perturbing | stream.valid)
                if conv is None
                else running & (~(perturbing & self.streaming) | stream.valid)
            ),
            self.queue.release.eq(
                (forward_end & ~self.has_tail) | fsm.ongoing("BP_END") if cfg.backprop else forward_end
            ),
            self.clear_loss.eq(self.batching & self.queue.batch_ready),
        ]
        # (flag, the FSM's decode of its state): equal in every cycle (a test checks them each cycle)
        self.state_flag_checks = [(flag, fsm.ongoing(name)) for name, flag in self.state_flags.items()]
