"""The network engine (twin of ``golden.engine.network``): a whole INT8 network on one R x C MAC array,
trained by ZO on chip -- weight memory -> perturbation -> ``PEArray`` -> requantisation into the
activation buffer (hidden layers) or the loss unit (logits), with a double-buffered batch queue.

Datapath, one weight word (C weights of one output) per cycle for R examples:

* issue (S0): the controller reads weight word ``word`` (global order) and, in a perturbed pass,
  consumes one stream vector (registered as p);
* S1: the weight word leaves the memory into a register (``WEIGHT_STAGES``: the block RAM's clock-to-out
  is followed by no logic); in the update, ``g * p`` (then round, then ``sat(w - step)`` written back);
* S2: ``w + p`` (p clamped to 9 bits beside its register: the same saturation) into a register (p = 0 in
  plain inference, negated by the stream in the -epsilon pass); the layer's activation word is read
  (layer 0: the batch bank at the head of the queue; later layers: the hidden buffer the previous layer
  wrote), its address ``ACTIVATION_READ_DELAY`` (2) cycles behind the issue;
* S3: ``sat(w + p, -127, 127)`` and the activation word (registered as read) into registers; S4: both into the
  array's input register (``OPERAND_STAGES``: no block RAM's clock-to-out and no add is followed by more
  logic in its cycle);
* results leave the array ``NET_FORWARD_LATENCY`` cycles after the issue of a row's last word: a hidden
  layer's R sums are requantised (the layer's shift and ReLU) into a register and written one cycle
  later to lane ``o % C`` of word ``o // C`` of the layer's hidden buffer (ping-pong: layer l writes
  buffer l % 2); the last layer's sums go to the logit memory and the loss unit;
* loss unit (``LOSS_LATENCY``): per row the label's logit and the running maximum of the others, the
  hinge term after the last output, a tree sum over the rows and an accumulator per pass.
* a conv layer (``hw.engine.conv_path``, built only for a net with one) walks its patches in golden's order:
  the weight word advances (and the stream is consumed) on a channel's first pixel only, later pixels take the
  row buffer's words; the activation word is the patch word (a zero word in the padding; a conv layer 0 reads
  the host's im2col'd batch, ``NetConfig.input_words`` words per example); the results fold in the 2 x 2 pool
  register and the window's last writes its lane of the HWC hidden word.

Operations (``op`` sampled with ``start`` while idle; ``busy`` until complete, then ``done``):

* ``OP_FORWARD_ZO`` -- take the batch at the head of the queue (wait while it is empty), NEXT(+), per
  tile the whole network (REWIND(+) before each later tile), REWIND(-), the same for -epsilon; the
  losses land in ``loss_plus`` / ``loss_minus`` (``margin`` sampled with start); release the batch.
* ``OP_UPDATE`` -- REWIND(+) and one pass over every weight with the host's ``g`` (Q8.16).
* Weight decay: every update (OP_UPDATE, or a TRAIN step's) subtracts ``round_shift(w, wd_shift)`` too
  (``wd_shift`` 0 = off) when the decay counter picks it: on every ``wd_every``-th update since reset
  (``golden.engine.network``; ``wd_shift`` and ``wd_every`` sampled with start).
* ``OP_INFER`` -- plain inference of the batch at the head of the queue (logits of pass 0); releases it.
* ``OP_TRAIN`` -- ``steps`` complete steps: batch, both passes, losses, g (``g_mode`` sign: +-``g_lr``;
  scaled: ``sat(round_shift(L+ - L-, g_shift))``; host: ``g``), update. ``step_done`` pulses once per
  step with ``loss_plus``, ``loss_minus`` and ``g_used`` of that step.

The logits of a forward operation (and of every TRAIN step) go to logit bank ``last_bank`` (it flips
every forward): the host reads one step's logits while the next step runs, one read per cycle, each
answered ``LOGIT_READ_LATENCY`` cycles after its address (``pe_array.logit_read``).

Batch queue: two banks of inputs and labels. The host writes examples (``x_*``) and labels (``y_*``) into
bank ``load_bank`` while ``load_ready`` (writes to a full bank are ignored), then pulses ``push``; any
time, also while busy. The engine releases a bank after the loss of its last pass.
Host weight and bias ports work while idle; ``w_rdata`` answers ``W_READ_LATENCY`` cycles after ``w_addr`` (the
weight word reaches the host from the S2 weight register, so no engine output is a block RAM's clock-to-out). No
perturbed weight is ever written to the weight memory.

ECP5 (``hw.engine.dsp.is_ecp5`` of the ``platform``; pezo's ECP5 timing flow): the products are MULT18X18D with
their input registers (``hw.engine.dsp``) and, without the backprop tail, the weight memory is DP16KD blocks whose
output register is the S2 weight register (``hw.engine.ebr``), the logit memory's is the host read's row register
and a deep input buffer's (``INPUT_EBR_MIN_WORDS``) is the S4 activation register: the same cycles, the same values.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pezo.golden.engine.int8 import ACC_BITS
from pezo.golden.engine.loss import G_SHIFT_RANGE, LOSS_BITS, MARGIN_BITS
from pezo.golden.engine.network import NET_FORWARD_LATENCY, NetConfig
from pezo.golden.engine.ops import Op
from pezo.golden.engine.zo_engine import (
    FORWARD_LATENCY,
    G_BITS,
    OPERAND_STAGES,
    PRODUCT_STAGES,
    WD_EVERY_BITS,
    WD_SHIFT_RANGE,
    WEIGHT_STAGES,
)
from pezo.hw.component import ConfigComponent, ConfigSignature
from pezo.hw.engine.bp_tail import (
    BP_BITS_WIDTH,
    KIND_FORWARD,
    TailMemories,
    hidden_depth,
    hidden_slot,
    hidden_words,
    tail_results,
)
from pezo.hw.engine.dsp import is_ecp5
from pezo.hw.engine.ebr import INPUT_EBR_MIN_WORDS, ebr_memory
from pezo.hw.engine.net_control import NetController
from pezo.hw.engine.net_datapath import Stage1, activation_reads, issue_pipeline, logit_row, tag_layout, update_pass
from pezo.hw.engine.net_loss import G_LATENCY, G_SHIFT_SPLIT, LOSS_LATENCY, g_unit, greater, loss_unit
from pezo.hw.engine.net_registers import STEP_BITS, Control
from pezo.hw.engine.pe_array import (
    PE_LATENCY,
    SHIFT_BITS,
    ArrayShape,
    PEArray,
    index_bits,
    int8_lanes,
    logit_read,
    near_perturbation,
    perturbed_sum,
    requantize_constant,
    scaled,
)
from pezo.hw.rng.perturb import PerturbationStream

# the op codes and W_READ_LATENCY stay defined here; the rest moved into net_control, net_datapath and net_loss
__all__ = ["OP_FORWARD_ZO", "OP_INFER", "OP_TRAIN", "OP_UPDATE", "W_READ_LATENCY", "NetEngine", "near_perturbation"]
__all__ += ["G_LATENCY", "G_SHIFT_SPLIT", "LOSS_LATENCY", "STEP_BITS", "Control", "Stage1", "greater", "logit_row"]
__all__ += ["perturbed_sum", "tag_layout"]

OP_FORWARD_ZO, OP_UPDATE, OP_INFER, OP_TRAIN = Op  # golden.engine.ops: the codes the host writes
W_READ_LATENCY = 2
"""Cycles from the host's ``w_addr`` (while idle) to its word on ``w_rdata``: the memory read, then the S2 weight
register."""
assert FORWARD_LATENCY == 1 + PE_LATENCY and WEIGHT_STAGES == 1 and OPERAND_STAGES == 2
assert NET_FORWARD_LATENCY == 4 + PE_LATENCY + PRODUCT_STAGES - 1


@dataclass
class _Ports:
    """The memory ports of ``NetEngine._elaborate_blocks`` (``h_*``: the hidden buffer, None for one layer)."""

    w_read: object
    w_write: object
    x_read: object
    x_write: object
    y_read: object
    y_write: object
    l_read: object
    l_write: object
    h_read: object
    h_write: object


@dataclass
class _Queue:
    """The batch queue's banks (``rp``: head, ``wp``: being loaded), its ``release`` input (driven by the
    controller) and ``batch_ready`` (the head bank holds a batch)."""

    rp: Signal
    wp: Signal
    release: Signal
    batch_ready: object


class NetEngine(ConfigComponent):
    """The network engine of ``NetConfig``; ports and semantics in the module docstring."""

    class Signature(ConfigSignature):
        config_type = NetConfig

        def members_for(self, cfg):
            members = {
                "start": In(1),
                "op": In(2),
                "steps": In(unsigned(STEP_BITS)),
                "g": In(signed(G_BITS)),
                "g_mode": In(2),
                "margin": In(unsigned(MARGIN_BITS - 1)),
                "g_lr": In(signed(G_BITS)),
                "g_shift": In(unsigned(G_SHIFT_RANGE[1].bit_length())),
                "wd_shift": In(unsigned(WD_SHIFT_RANGE[1].bit_length())),
                "wd_every": In(unsigned(WD_EVERY_BITS)),
                "busy": Out(1),
                "done": Out(1),
                "cycles": Out(32),
                "wait_cycles": Out(32),
                "step_done": Out(1),
                "steps_done": Out(unsigned(STEP_BITS)),
                "loss_plus": Out(unsigned(LOSS_BITS)),
                "loss_minus": Out(unsigned(LOSS_BITS)),
                "g_used": Out(signed(G_BITS)),
                "last_bank": Out(1),
                "w_addr": In(unsigned(index_bits(cfg.memory_words))),
                "w_wdata": In(int8_lanes(cfg.array.cols)),
                "w_we": In(1),
                "w_rdata": Out(int8_lanes(cfg.array.cols)),
                "x_example": In(unsigned(index_bits(cfg.array.batch))),
                "x_word": In(unsigned(index_bits(cfg.input_words))),
                "x_wdata": In(int8_lanes(cfg.array.cols)),
                "x_we": In(1),
                "y_example": In(unsigned(index_bits(cfg.array.batch))),
                "y_label": In(unsigned(index_bits(cfg.outputs))),
                "y_we": In(1),
                "push": In(1),
                "load_ready": Out(1),
                "load_bank": Out(1),
                "queued": Out(2),
                "logit_bank": In(1),
                "logit_pass": In(1),
                "logit_example": In(unsigned(index_bits(cfg.array.batch))),
                "logit_output": In(unsigned(index_bits(cfg.outputs))),
                "requant_shift": In(unsigned(SHIFT_BITS)),
                "logit": Out(signed(ACC_BITS)),
                "logit_q": Out(signed(8)),
            }
            if cfg.backprop:
                members.update(
                    {
                        "split": In(unsigned(index_bits(len(cfg.layers) + 1))),
                        "bp_bits": In(unsigned(BP_BITS_WIDTH)),
                        "bp_cycles": Out(32),
                    }
                )
            if any(l.bias for l in cfg.layers):
                members.update(
                    {
                        "b_addr": In(unsigned(index_bits(cfg.total_outputs))),
                        "b_wdata": In(signed(ACC_BITS)),
                        "b_we": In(1),
                    }
                )
            return members

    def elaborate(self, platform):
        """The stages below, in datapath order, on one Module (the order keeps the Verilog unchanged)."""
        m = Module()
        cfg = self.config
        ecp5 = is_ecp5(platform)
        stream, pe, mem = self._elaborate_blocks(m, cfg, ebr=ecp5 and not cfg.backprop)
        self.tail_memories = TailMemories(m, cfg) if cfg.backprop else None
        queue = self._elaborate_batch_queue(m)
        ctl = self._elaborate_controller(m, cfg, stream, queue)
        self._elaborate_reads(m, cfg, stream, mem, queue, ctl)
        s1 = self._elaborate_issue_pipeline(m, cfg, stream, pe, mem, ctl)
        self._elaborate_update(m, cfg, mem, ctl, s1, ecp5)
        self._elaborate_results(m, cfg, pe, mem, queue, ctl)
        self._elaborate_g(m, ctl)
        self._elaborate_host_ports(m, cfg, mem, queue)
        return m

    def _elaborate_blocks(self, m, cfg, ebr=False):
        """The perturbation stream, the ``PEArray`` and the memories (weights, two input banks, two label
        banks, four logit banks, the ping-pong hidden buffer when ``L > 1``). Returns the stream, the array
        and the memory ports (``_Ports``); later stages drive every port. ``ebr``: the weight and logit memories are
        ``hw.engine.ebr``'s (their read data two cycles after the address, through the blocks' output register)."""
        R, C, T, L, O = cfg.array.rows, cfg.array.cols, cfg.array.tiles, len(cfg.layers), cfg.outputs
        J0 = cfg.input_words
        slot_words = hidden_words(cfg)
        has_bias = any(l.bias for l in cfg.layers)
        tag_shape = tag_layout(cfg)

        m.submodules.stream = stream = PerturbationStream(cfg.perturb)
        m.submodules.pe = pe = PEArray(ArrayShape(R, C, tag_shape.size, bias=has_bias, product_stages=PRODUCT_STAGES))
        if ebr:
            w_read, w_write = ebr_memory(m, "weight_mem", int8_lanes(C), cfg.memory_words)
        else:
            m.submodules.weight_mem = weight_mem = Memory(shape=int8_lanes(C), depth=cfg.memory_words, init=[])
            w_read, w_write = weight_mem.read_port(), weight_mem.write_port()
        input_shape = data.ArrayLayout(int8_lanes(C), R)
        if ebr and 2 * T * J0 >= INPUT_EBR_MIN_WORDS:  # one example's lane per block: a write enable per row
            x_read, x_write = ebr_memory(m, "input_mem", input_shape, 2 * T * J0, lanes=R)
        else:
            m.submodules.input_mem = input_mem = Memory(shape=input_shape, depth=2 * T * J0, init=[])
            x_read, x_write = input_mem.read_port(), input_mem.write_port(granularity=1)
        m.submodules.label_mem = label_mem = Memory(
            shape=data.ArrayLayout(unsigned(index_bits(O)), R), depth=2 * T, init=[]
        )
        logit_shape = data.ArrayLayout(signed(ACC_BITS), R)
        if ebr:
            l_read, l_write = ebr_memory(m, "logit_mem", logit_shape, 4 * T * O)
        else:
            m.submodules.logit_mem = logit_mem = Memory(shape=logit_shape, depth=4 * T * O, init=[])
            l_read, l_write = logit_mem.read_port(), logit_mem.write_port()
        y_read, y_write = label_mem.read_port(), label_mem.write_port(granularity=1)
        h_read = h_write = None
        if L > 1:
            depth = hidden_depth(cfg) if cfg.backprop else 2 * slot_words
            m.submodules.hidden_mem = hidden_mem = Memory(
                shape=data.ArrayLayout(signed(8), R * C), depth=depth, init=[]
            )
            h_read, h_write = hidden_mem.read_port(), hidden_mem.write_port(granularity=1)
        return stream, pe, _Ports(w_read, w_write, x_read, x_write, y_read, y_write, l_read, l_write, h_read, h_write)

    def _elaborate_batch_queue(self, m):
        """The two-bank batch queue: ``push`` (host) fills bank ``write_bank`` in the next cycle, ``release``
        (driven by the controller) frees bank ``read_bank`` in the next cycle. Drives ``load_ready``,
        ``load_bank``, ``queued``; returns ``_Queue`` (``batch_ready``: the head bank holds a batch, this cycle, a
        register)."""
        full = Signal(2)  # bank b holds a batch
        rp, wp = Signal(name="read_bank"), Signal(name="write_bank")
        release = Signal()
        pushing = self.push & ~full.bit_select(wp, 1)
        with m.If(pushing):
            m.d.sync += wp.eq(~wp)
        set_bits = Mux(pushing, Mux(wp, 0b10, 0b01), 0)
        clear_bits = Mux(release, Mux(rp, 0b10, 0b01), 0)
        m.d.sync += full.eq((full | set_bits) & ~clear_bits)
        with m.If(release):
            m.d.sync += rp.eq(~rp)
        m.d.comb += [
            self.load_ready.eq(~full.bit_select(wp, 1)),
            self.load_bank.eq(wp),
            self.queued.eq(full[0] + full[1]),
        ]
        # batch_ready is a register of its own, loaded from the next state of ``full`` and ``rp``: the same value
        # in every cycle as their select, and the controller's step decision starts from one flip-flop (the
        # read_bank -> batch_ready -> the walk's loads path limited the rt-mlp trainer top on ECP5)
        batch_ready = Signal(name="batch_ready")
        m.d.sync += batch_ready.eq(((full | set_bits) & ~clear_bits).bit_select(rp ^ release, 1))
        return _Queue(rp, wp, release, batch_ready)

    def _elaborate_controller(self, m, cfg, stream, queue):
        """The issue stage S0 (``hw.engine.net_control.NetController``): the FSM of the operations, the operands
        sampled with ``start``, the walk, the decay counter and the strobes. Returns ``Control``."""
        controller = NetController(self, m, cfg, stream, queue)
        self.state_flag_checks = controller.state_flag_checks
        return controller.control()

    def _elaborate_reads(self, m, cfg, stream, mem, queue, ctl):
        """The weight and activation reads (``hw.engine.net_datapath.activation_reads``)."""
        activation_reads(self, m, cfg, stream, mem, queue, ctl)

    def _elaborate_issue_pipeline(self, m, cfg, stream, pe, mem, ctl):
        """S1..S4 (``hw.engine.net_datapath.issue_pipeline``). Returns ``Stage1``."""
        return issue_pipeline(self, m, cfg, stream, pe, mem, ctl)

    def _elaborate_update(self, m, cfg, mem, ctl, s1, ecp5=False):
        """The update pass (``hw.engine.net_datapath.update_pass``)."""
        update_pass(self, m, cfg, mem, ctl, s1, ecp5)

    def _elaborate_results(self, m, cfg, pe, mem, queue, ctl):
        """The array's results, ``NET_FORWARD_LATENCY`` cycles after a row's last word: a hidden layer's sums
        requantised into a register, written one cycle later to its lane of the hidden buffer; the last
        layer's sums into logit bank ``parity`` (this cycle) and the loss unit (``hw.engine.net_loss.loss_unit``: drives
        ``ctl.loss`` ``LOSS_LATENCY`` cycles after the last logit)."""
        R, C, L = cfg.array.rows, cfg.array.cols, len(cfg.layers)
        slot_words = hidden_words(cfg)
        tag_shape = tag_layout(cfg)
        h_write, l_write = mem.h_write, mem.l_write
        out_tag = Signal(tag_shape)
        m.d.comb += out_tag.eq(pe.out_tag)
        forward_valid = pe.out_valid if ctl.bp is None else pe.out_valid & (out_tag.kind == KIND_FORWARD)
        if L > 1:
            h_valid, h_tag = Signal(), Signal(tag_shape)
            h_values = Signal(data.ArrayLayout(signed(8), R))
            m.d.sync += [h_valid.eq(forward_valid & out_tag.hidden), h_tag.eq(out_tag)]
            requantised = []  # per hidden layer: its shift and ReLU on the R sums
            for lay in cfg.layers[:-1]:
                requantised.append([requantize_constant(pe.sums[r], lay.shift, lay.relu) for r in range(R)])
            with m.Switch(out_tag.layer):
                for i, values in enumerate(requantised):
                    with m.Case(i):
                        m.d.sync += [h_values[r].eq(values[r]) for r in range(R)]
            slot = scaled(h_tag.layer[0], slot_words) if ctl.bp is None else hidden_slot(cfg, h_tag.tile, h_tag.layer)
            written, write_valid = [h_values[r] for r in range(R)], h_valid
            if ctl.conv is not None:  # a conv layer's 2 x 2 pool: the window's last result writes
                written, write_valid = ctl.conv.pool_write(m, written, h_tag, h_valid)
            m.d.comb += [
                h_write.addr.eq(slot + h_tag.o_word),
                h_write.data.eq(Cat(*[written[r].replicate(C) for r in range(R)])),
            ]
            lane_mask = Cat(*[(Const(1, C) << h_tag.o_lane)[:C] for _ in range(R)])  # lane o % C of every row
            m.d.comb += h_write.en.eq(Mux(write_valid, lane_mask, 0))
        m.d.comb += [
            l_write.addr.eq(out_tag.logit_row),
            l_write.data.eq(pe.sums),
            l_write.en.eq(forward_valid & ~out_tag.hidden),
        ]
        loss_unit(m, cfg, pe, out_tag, forward_valid, mem.y_read, queue.rp, ctl, self.tail_memories)
        if ctl.bp is not None:
            tail_results(self, m, cfg, pe, mem, ctl, out_tag)

    def _elaborate_g(self, m, ctl):
        """g from the two losses (``hw.engine.net_loss.g_unit``): drives ``ctl.g_formed``."""
        g_unit(m, ctl)

    def _elaborate_host_ports(self, m, cfg, mem, queue):
        """The host's batch writes (``x_*``, ``y_*``) into bank ``write_bank`` while ``load_ready``, and its logit
        reads (``logit_*``: ``logit`` / ``logit_q`` ``LOGIT_READ_LATENCY`` cycles after the address). A write is
        decided in its cycle (``load_ready``, the bank, the row) and lands one edge later from registers: the
        memories' write enables (one register per row) start at flip-flops, not at ``full`` -> ``load_ready``
        (the input buffer's LUT RAM has a write enable per 4 bits of a row). The bank it lands in was chosen in
        its cycle, so a ``push`` in the cycle of the last write or the next one finds the batch whole; the
        engine reads a bank at the earliest two cycles after its ``push``."""
        R, T, J0 = cfg.array.rows, cfg.array.tiles, cfg.input_words
        wp, x_write, y_write, l_read = queue.wp, mem.x_write, mem.y_write, mem.l_read
        x_addr, x_data = Signal.like(x_write.addr, name="x_write_addr"), Signal.like(self.x_wdata, name="x_write_data")
        x_en = Signal.like(x_write.en, name="x_write_en")
        y_addr, y_data = Signal.like(y_write.addr, name="y_write_addr"), Signal.like(self.y_label, name="y_write_data")
        y_en = Signal.like(y_write.en, name="y_write_en")
        m.d.sync += [
            x_addr.eq(scaled(scaled(wp, T) + self.x_example // R, J0) + self.x_word),
            x_data.eq(self.x_wdata),
            x_en.eq(Mux(self.x_we & self.load_ready, 1 << (self.x_example % R), 0)),
            y_addr.eq(scaled(wp, T) + self.y_example // R),
            y_data.eq(self.y_label),
            y_en.eq(Mux(self.y_we & self.load_ready, 1 << (self.y_example % R), 0)),
        ]
        m.d.comb += [
            x_write.addr.eq(x_addr),
            x_write.data.eq(x_data.as_value().replicate(R)),
            x_write.en.eq(x_en),
            y_write.addr.eq(y_addr),
            y_write.data.eq(y_data.replicate(R)),
            y_write.en.eq(y_en),
        ]
        # read: address register -> memory row -> the example's lane (registered) -> requantise (REQUANT_STAGES)
        l_addr = logit_row(cfg, self.logit_bank, self.logit_pass, self.logit_example // R, self.logit_output)
        logit_read(m, l_read, l_addr, self.logit_example % R, self.requant_shift, self.logit, self.logit_q)
