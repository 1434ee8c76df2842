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

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from pezo.golden.engine.int8 import ACC_BITS
from pezo.golden.engine.loss import G_MODE_CODES, G_SHIFT_RANGE, LOSS_BITS, MARGIN_BITS
from pezo.golden.engine.network import (
    LAYER_GAP,
    NET_FORWARD_LATENCY,
    NET_UPDATE_LATENCY,
    NetConfig,
)
from pezo.golden.engine.zo_engine import (
    ACTIVATION_READ_DELAY,
    FORWARD_LATENCY,
    G_BITS,
    G_MAX,
    G_MIN,
    OPERAND_STAGES,
    PRODUCT_STAGES,
    WD_EVERY_BITS,
    WD_SHIFT_RANGE,
    WEIGHT_STAGES,
)
from pezo.golden.rng.perturb import STREAM_BITS
from pezo.hw.component import ConfigComponent, ConfigSignature
from pezo.hw.engine.bp_tail import (
    BP_BITS_WIDTH,
    KIND_FORWARD,
    TailMemories,
    hidden_depth,
    hidden_slot,
    hidden_words,
    tail_operands,
    tail_results,
    tail_states,
    tail_strobes,
)
from pezo.hw.engine.conv_path import ConvPath, row_words
from pezo.hw.engine.dsp import is_ecp5
from pezo.hw.engine.ebr import INPUT_EBR_MIN_WORDS, EbrRead, ebr_memory
from pezo.hw.engine.pe_array import (
    PE_LATENCY,
    PERTURBATION_NEAR_BITS,
    PERTURBED_SUM_BITS,
    SHIFT_BITS,
    ArrayShape,
    Countdown,
    PEArray,
    clamp_int8,
    delayed,
    index_bits,
    int8_lanes,
    logit_read,
    near_perturbation,
    perturbed_sum,
    requantize_constant,
    saturate,
    scaled,
    select,
    tree_sum,
    weight_write,
)
from pezo.hw.engine.update import update_step
from pezo.hw.rng.perturb import PerturbationStream

OP_FORWARD_ZO, OP_UPDATE, OP_INFER, OP_TRAIN = 0, 1, 2, 3
LOSS_LATENCY = 8
"""Cycles from the last logit in the logit memory to the final loss: label read, "is the label", label/best
registers, best - label, hinge term, the row sum's two halves, accumulate (``_loss_unit``)."""
G_LATENCY = 3
"""Registers between the final losses and g: the rounded difference ((L+ + half) - L-, ``L+ + half`` registered
beforehand), the shift by ``g_shift``'s low ``G_SHIFT_SPLIT`` bits, the shift by the rest."""
G_SHIFT_SPLIT = 3
"""Low bits of ``g_shift`` (0..47) in g's first shift register: two 8-way shifts, not one 48-way barrel shifter."""
W_READ_LATENCY = 2
"""Cycles from the host's ``w_addr`` (while idle) to its word on ``w_rdata``: the memory read, then the S2 weight
register."""
STEP_BITS = 16
assert FORWARD_LATENCY == 1 + PE_LATENCY and WEIGHT_STAGES == 1 and OPERAND_STAGES == 2
assert NET_FORWARD_LATENCY == 4 + PE_LATENCY + PRODUCT_STAGES - 1


def greater(a, b):
    """``a > b`` of two signed values as the sign bit of ``b - a`` at one bit past the wider operand: one carry
    chain whose top sum bit is the answer (Yosys's ``>`` on ECP5 adds a carry-out cell and the overflow LUTs)."""
    return (b.as_signed() - a.as_signed())[-1]


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


@dataclass
class _Control:
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


@dataclass
class _Stage1:
    """The S1 registers the update reads (``p``, ``valid1``, ``update1``, ``addr1``) and the S2 registers
    (``p2``: ``p`` one cycle later, ``w2``: the weight word)."""

    p: Signal
    p2: Signal
    valid1: Signal
    update1: Signal
    addr1: Signal
    w2: Signal


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
        """The issue stage S0: the FSM of the operations (module docstring), the operands sampled with
        ``start``, the walk over tiles, layers, outputs and words, the decay counter, and the strobes
        (stream commands, ``en``, ``issue``, the queue's ``release``, ``clear_loss``) as plain expressions
        of its registers. Reads ``queue.batch_ready``, ``stream.valid``, the losses and ``g_formed`` (both
        created here, driven by ``_elaborate_results`` / ``_elaborate_g``). Drives ``busy``, ``done``,
        ``cycles``, ``wait_cycles``, ``step_done``, ``steps_done``, ``g_used``, ``last_bank``, ``loss_plus``,
        ``loss_minus``. Returns ``_Control``: the walk position of the word issued in this cycle."""
        T, L, C = cfg.array.tiles, len(cfg.layers), cfg.array.cols
        slot_words = hidden_words(cfg)
        batch_ready, release = queue.batch_ready, queue.release
        op, g, mode = Signal(2, name="op"), Signal(signed(G_BITS), name="g"), Signal(2, name="mode")
        margin, g_lr, g_shift = Signal.like(self.margin), Signal.like(self.g_lr), Signal.like(self.g_shift)
        wd_shift, wd_every = Signal.like(self.wd_shift), Signal.like(self.wd_every)
        # the decay counter (golden.engine.network): kept across operations, 0 after reset; at the start of
        # each update phase the decay acts iff count + 1 >= wd_every (wd_every 0 acts as 1)
        # the counter is kept as count + 1 (init 1; at most wd_every <= 2^WD_EVERY_BITS - 1, so it fits), so the
        # decision is one compare and the next value one increment, not an add feeding a compare
        count_plus_one, decay_on = Signal(unsigned(WD_EVERY_BITS), name="decay_count_plus_one", init=1), Signal()

        def decide_decay(every):
            acts = count_plus_one >= every
            return [decay_on.eq(acts), count_plus_one.eq(Mux(acts, 1, count_plus_one + 1))]

        if cfg.backprop:  # the partition C (OP_TRAIN only; other operations run full ZO) and b_BP
            split, bp_bits = Signal(range(L + 1), name="split_c"), Signal(unsigned(BP_BITS_WIDTH), name="bp_bits_q")
            zo_end = Signal(range(cfg.weight_words + 1), name="zo_end")
            m.d.comb += zo_end.eq(select(split, [sum(map(cfg.layer_weights, range(i))) // C for i in range(L + 1)]))
            full_bp, has_tail = split == 0, split != L
        else:
            split = bp_bits = None
            zo_end, full_bp, has_tail = Const(cfg.weight_words), Const(0), Const(0)
        steps_left = Signal(unsigned(STEP_BITS))
        updating = Signal()  # the update phase of a step (or OP_UPDATE)
        sign, tile, layer = Signal(name="sign"), Signal(range(T), name="tile"), Signal(range(max(L, 2)), name="layer")
        word = Signal(range(max(cfg.weight_words, 2)))
        j = Signal(range(max(row_words(l, C) for l in cfg.layers) + 1), name="walk_j")
        o = Signal(range(max(l.outputs for l in cfg.layers) + 1), name="walk_o")
        o_word, o_lane = Signal(range(slot_words + 1)), Signal(range(C))
        drain = Countdown(NET_FORWARD_LATENCY + LOSS_LATENCY + G_LATENCY + LAYER_GAP, "drain")
        parity = Signal()
        # a register set with ``op`` (and the split) at start: op != INFER, and not C = 0 with the tail (after a reset:
        # op 0, split 0); the issue's decisions read it from a flip-flop
        perturbing = Signal(name="perturbing", init=OP_INFER != 0 and not cfg.backprop)
        issue, wanting = Signal(name="issue"), Signal(name="wanting")
        # The walk's end flags (j == its row's last word, o == its layer's last output, layer == L - 1) are
        # registers kept beside the counters: each is the compare of its counter's next value, so the issue's
        # decisions start from flip-flops (the layer -> compare -> FSM path limited the engine on ECP5).
        row_lengths, out_counts = [row_words(lay, C) for lay in cfg.layers], [lay.outputs for lay in cfg.layers]
        j_last = Signal(name="walk_j_last", init=row_lengths[0] == 1)
        o_last = Signal(name="walk_o_last", init=out_counts[0] == 1)
        last_layer = Signal(name="walk_last_layer", init=L == 1)
        o_step = Signal.like(o, name="walk_o_step")  # o + 1 at o's width (an update pass runs past the outputs)
        m.d.comb += o_step.eq(o + 1)

        def one_in(at, counts):  # counts[at] == 1, for an int or an expression of the layer
            return counts[at] == 1 if isinstance(at, int) else select(at, [Const(n == 1) for n in counts])

        def walk_start(at):  # the flags at j = o = 0 of layer ``at``
            return [j_last.eq(one_in(at, row_lengths)), o_last.eq(one_in(at, out_counts)), last_layer.eq(at == L - 1)]

        row_done = j_last
        layer_done = j_last & o_last
        # word == its last (an update pass's end) is a register beside the counter too, loaded with every load of
        # word from the compare of its next value (the word -> compare -> the update's end path limited the
        # rt-mlp trainer top on ECP5)
        last_word = Signal(name="walk_last_word", init=cfg.weight_words == 1)

        def word_to(value):  # word <- value, and its flag
            value = Value.cast(value)
            return [word.eq(value), last_word.eq(value[: len(word)] == cfg.weight_words - 1)]

        conv = streaming = None
        if cfg.has_conv:  # conv layers walk their patches (hw.engine.conv_path); the word advances on stream words
            conv = ConvPath(m, cfg, layer, issue, updating, ~self.busy)
            streaming = conv.streaming
            layer_done = j_last & Mux(conv.active, conv.final, o_last)

        with m.If(self.busy):
            m.d.sync += self.cycles.eq(self.cycles + 1)
        m.d.sync += self.step_done.eq(0)
        # The walk is back at its start after every pass: a forward pass ends at its last layer's last row, which
        # returns it there, and an update pass's last word does (``reset_walk``). So no other state loads the walk
        # (it starts from 0 after reset): its registers have the issue as their only enable, not the decisions of
        # IDLE, BATCH and FORWARD_DRAIN as well (those -> the walk's registers limited the rt-mlp trainer top on
        # ECP5, 7 ns of routing from the controller to the walk).
        reset_walk = [*word_to(0), j.eq(0), o.eq(0), o_word.eq(0), o_lane.eq(0), layer.eq(0), *walk_start(0)]
        loss = [Signal(unsigned(LOSS_BITS), name=f"loss_{s}") for s in range(2)]
        clear_loss = Signal()
        g_formed = Signal(signed(G_BITS))
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

        # The states whose loads lie on the engine's paths (IDLE, BATCH, RUN, FORWARD_DRAIN) are also flip-flops of
        # their own, set by the moves into the state and cleared by those out of it (``goto``). Each such state's
        # body runs twice: once outside the FSM under its flag with ``loads_pass`` (only the loads, so their
        # enables are a LUT of flip-flops rather than a decode of the binary state register), once inside the FSM
        # with ``moves_pass`` (only the moves); its conditions are the same expressions both times. On ECP5 the
        # fsm_state -> issue -> command_rewind (rt-mlp), fsm_state -> start -> wait_cycles (rt-mlp pregen),
        # fsm_state -> the walk (the rt-mlp trainer top) and fsm_state -> g (digits-mlp pregen) paths each limited a
        # design. The batch waits are counted from registers (``batch_waiting``, the clear at ``start`` one cycle
        # later, ``wait_cycles_clear``; the same totals).
        running, idle = Signal(name="running"), Signal(name="idle", init=1)
        batching, forward_draining = Signal(name="batching"), Signal(name="forward_draining")
        state_flags = {"IDLE": idle, "BATCH": batching, "RUN": running, "FORWARD_DRAIN": forward_draining}

        current = []  # the flagged state whose moves are being written

        def goto(state: str):  # a move clears the flag of the state it leaves and sets the one it enters (at
            # most one goto per branch: a later one would not undo an earlier one's flag)
            m.next = state
            if current and current[-1] != state:
                m.d.sync += state_flags[current[-1]].eq(0)
            if state in state_flags:
                m.d.sync += state_flags[state].eq(1)

        def flagged_state(name: str):  # the FSM's state ``name`` with the moves of its body (``bodies``)
            with m.State(name):
                current.append(name)
                bodies[name](moves_pass)
                current.pop()

        def loads_pass(loads=(), move=None):
            m.d.sync += loads

        def moves_pass(loads=(), move=None):
            if move is not None:
                move()

        batch_waiting, wait_clear = Signal(name="batch_waiting"), Signal(name="wait_cycles_clear")
        m.d.sync += [
            batch_waiting.eq(0),
            wait_clear.eq(0),
            self.wait_cycles.eq(Mux(wait_clear, 0, self.wait_cycles + batch_waiting)),
        ]

        def to_command(command: Signal):
            m.d.sync += command.eq(1)
            goto("COMMAND")

        def idle_start(act):  # IDLE, at start: the operands and status registers, and the first move
            with m.If(self.start):
                act(
                    [
                        wait_clear.eq(1),
                        op.eq(self.op),
                        training.eq(self.op == OP_TRAIN),
                        perturbing.eq(self.op != OP_INFER),
                        g.eq(self.g),
                        mode.eq(Mux(self.op == OP_TRAIN, self.g_mode, 0)),
                        margin.eq(self.margin),
                        g_lr.eq(self.g_lr),
                        g_shift.eq(self.g_shift),
                        wd_shift.eq(self.wd_shift),
                        wd_every.eq(self.wd_every),
                        steps_left.eq(self.steps),
                        self.done.eq(0),
                        self.cycles.eq(0),
                        self.steps_done.eq(0),
                        self.busy.eq(1),
                        updating.eq(self.op == OP_UPDATE),
                        sign.eq(0),
                        tile.eq(0),
                    ]
                )
                if cfg.backprop:  # a C past L runs full ZO
                    train_split = Mux(self.split > L, L, self.split)
                    act(
                        [
                            split.eq(Mux(self.op == OP_TRAIN, train_split, L)),
                            perturbing.eq((self.op != OP_INFER) & ~((self.op == OP_TRAIN) & (train_split == 0))),
                            bp_bits.eq(self.bp_bits),
                            self.bp_cycles.eq(0),
                        ]
                    )
                with m.If(self.op == OP_UPDATE):
                    act(decide_decay(self.wd_every), lambda: to_command(command_update))  # updating: REWIND
                with m.Elif((self.op == OP_TRAIN) & (self.steps == 0)):
                    act(move=lambda: goto("FINISH"))
                with m.Else():
                    act(move=lambda: goto("BATCH"))

        def batch_start(act):  # BATCH: a step begins when its batch is in the queue
            with m.If(batch_ready):
                act([updating.eq(0), sign.eq(0), tile.eq(0)])
                with m.If(op == OP_INFER):
                    act(move=lambda: goto("RUN"))
                if cfg.backprop:
                    with m.Elif(full_bp):  # C = 0: one plain pass, as the -epsilon pass (its logits and loss)
                        act([sign.eq(1)], lambda: goto("RUN"))
                with m.Else():
                    act(move=lambda: to_command(command_next))  # not updating, sign 0, tile 0: NEXT
            with m.Else():
                act([batch_waiting.eq(1)])

        def run_issue(act):  # RUN, at an issue: the walk advances; a pass's end moves on
            with m.If(issue):
                act(
                    [
                        *word_to(word + 1 if conv is None else Mux(streaming, word + 1, word)),
                        j.eq(Mux(row_done, 0, j + 1)),
                        j_last.eq(
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
                            o_last.eq(select(layer, [o_step == n - 1 for n in out_counts])),
                            o_lane.eq(Mux(o_lane == C - 1, 0, o_lane + 1)),
                        ]
                    )
                    with m.If(o_lane == C - 1):
                        act([o_word.eq(o_word + 1)])
                with m.If(updating):
                    with m.If(last_word):
                        act([*drain.load(NET_UPDATE_LATENCY - 1), *reset_walk], lambda: goto("UPDATE_DRAIN"))
                with m.Elif(layer_done):
                    act([j.eq(0), o.eq(0), o_word.eq(0), o_lane.eq(0)])
                    with m.If(~last_layer):
                        next_layer = [layer.eq(layer + 1), *drain.load(LAYER_GAP - 1), *walk_start(layer + 1)]
                        act(next_layer, lambda: goto("GAP"))
                    with m.Else():
                        act([layer.eq(0), *word_to(0), *walk_start(0)])
                        with m.If(tile != T - 1):
                            act([tile.eq(tile + 1)])
                            with m.If(perturbing):
                                act(move=lambda: to_command(command_rewind))  # tile > 0: REWIND
                            with m.Else():
                                act(move=lambda: goto("RUN"))
                        with m.Elif(perturbing & (sign == 0)):
                            act([sign.eq(1), tile.eq(0)], lambda: to_command(command_rewind))  # sign 1: REWIND
                        with m.Else():
                            forward_drain = drain.load(NET_FORWARD_LATENCY + LOSS_LATENCY + G_LATENCY - 1)
                            act(forward_drain, lambda: goto("FORWARD_DRAIN"))

        def forward_drain_end(act):  # FORWARD_DRAIN: the pipeline drains; then the losses, g and the update
            act(drain.tick())
            with m.If(drain.zero):
                act(
                    [
                        parity.eq(~parity),
                        self.last_bank.eq(parity),
                        self.loss_plus.eq(loss[0]),
                        self.loss_minus.eq(loss[1]),
                    ]
                )
                if cfg.backprop:
                    with m.If(training & full_bp):
                        act([g.eq(0)], lambda: goto("BP_START"))
                with (m.Elif if cfg.backprop else m.If)(training):
                    update = [
                        g.eq(Mux(mode == G_MODE_CODES["host"], g, g_formed)),
                        updating.eq(1),
                        sign.eq(0),
                        tile.eq(0),
                        *decide_decay(wd_every),
                    ]
                    act(update, lambda: to_command(command_update))  # updating: REWIND
                with m.Else():
                    act(move=lambda: goto("FINISH"))

        bodies = {"IDLE": idle_start, "BATCH": batch_start, "RUN": run_issue, "FORWARD_DRAIN": forward_drain_end}
        for name, body in bodies.items():
            with m.If(state_flags[name]):
                body(loads_pass)
        with m.FSM(init="IDLE") as fsm:
            flagged_state("IDLE")
            flagged_state("BATCH")
            with m.State("COMMAND"):  # NEXT opens a step, REWIND replays it
                goto("RUN")
            flagged_state("RUN")
            with m.State("GAP"):  # the last outputs of a layer reach its buffer before the next layer reads them
                m.d.sync += drain.tick()
                with m.If(drain.zero):
                    goto("RUN")
            flagged_state("FORWARD_DRAIN")

            def finish_step():
                m.d.sync += [
                    self.step_done.eq(1),
                    self.steps_done.eq(self.steps_done + 1),
                    self.g_used.eq(g),
                    steps_left.eq(steps_left - 1),
                ]
                with m.If(steps_left == 1):  # one move per branch: goto's flags follow its moves
                    goto("FINISH")
                with m.Else():
                    goto("BATCH")

            with m.State("UPDATE_DRAIN"):
                m.d.sync += drain.tick()
                with m.If(drain.zero):
                    if cfg.backprop:
                        with m.If(training & has_tail):
                            goto("BP_START")
                    with (m.Elif if cfg.backprop else m.If)(training):
                        finish_step()
                    with m.Else():
                        m.d.sync += self.g_used.eq(g)
                        goto("FINISH")
            with m.State("FINISH"):
                m.d.sync += [self.busy.eq(0), self.done.eq(1)]
                goto("IDLE")
            bp = tail_states(self, m, cfg, fsm, split, bp_bits, drain, updating, finish_step) if cfg.backprop else None

        if bp is not None:
            tail_strobes(self, m, fsm, bp)
        # Strobes of the controller as plain expressions of its registers (continuous assignments: 4-state
        # simulators evaluate them from time 0)
        if conv is not None:
            m.d.comb += conv.running.eq(running)
        m.d.comb += [
            stream.next.eq(command_next),
            stream.rewind.eq(command_rewind | command_update),
            stream.sign.eq(sign),
            wanting.eq(running & perturbing if conv is None else running & perturbing & streaming),
            issue.eq(
                running & (~perturbing | stream.valid)
                if conv is None
                else running & (~(perturbing & streaming) | stream.valid)
            ),
            release.eq(
                (forward_draining & drain.zero & ~has_tail) | fsm.ongoing("BP_END")
                if cfg.backprop
                else forward_draining & drain.zero
            ),
            clear_loss.eq(batching & batch_ready),
        ]
        # (flag, the FSM's decode of its state): equal in every cycle (a test checks them each cycle)
        self.state_flag_checks = [(flag, fsm.ongoing(name)) for name, flag in state_flags.items()]
        if conv is not None:  # the tag's output (bias index, hidden-buffer word and lane) from the walk
            o, o_word, o_lane = (
                Mux(conv.active, new, old)
                for new, old in zip((conv.channel, conv.out_word, conv.out_lane), (o, o_word, o_lane))
            )
        return _Control(
            g,
            mode,
            margin,
            g_lr,
            g_shift,
            wd_shift,
            decay_on,
            updating,
            sign,
            tile,
            layer,
            word,
            j,
            o,
            o_word,
            o_lane,
            parity,
            perturbing,
            issue,
            wanting,
            row_done,
            last_layer,
            loss,
            clear_loss,
            g_formed,
            zo_end,
            bp,
            conv,
        )

    def _elaborate_reads(self, m, cfg, stream, mem, queue, ctl):
        """The reads: the weight word at the issue (S0; the host's ``w_addr`` while idle) with the stream's
        ``en``; the activation word ``ACTIVATION_READ_DELAY`` cycles later (address registered that many times:
        layer 0 from the batch bank at the head of the queue, later layers from the hidden buffer), so that,
        registered as read, it meets the clamped weight word at S4."""
        T, L, J0 = cfg.array.tiles, len(cfg.layers), cfg.input_words
        x_read, h_read, bp = mem.x_read, mem.h_read, ctl.bp
        m.d.comb += stream.en.eq(ctl.wanting)
        if bp is None:
            m.d.comb += mem.w_read.addr.eq(Mux(self.busy, ctl.word, self.w_addr))
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

    def _elaborate_issue_pipeline(self, m, cfg, stream, pe, mem, ctl):
        """S1: registers the issued word's perturbation ``p`` (0 in plain inference), flags and tag; the weight
        word leaves the memory. S2: registers the weight word (also ``w_rdata``; on ECP5 the register is the weight
        memory's output register, ``hw.engine.ebr``), ``p`` (and ``p`` clamped) and the flags. S3: ``w + p``.
        S4: ``sat(w + p)`` and the activation word (read with the address ``ACTIVATION_READ_DELAY`` cycles late),
        which drive the array's inputs (and the bias, ``_bias``).
        Returns ``_Stage1``: the S1 registers and the S2 weight word ``w2`` the update reads."""
        C, L = cfg.array.cols, len(cfg.layers)
        tag_shape = tag_layout(cfg)
        w_read, x_read, h_read = mem.w_read, mem.x_read, mem.h_read
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
        # -- S2: the registered weight word + p (the conv row buffer) ------------------------------------
        w2, p2 = Signal(int8_lanes(C), name="weights_2"), Signal.like(p, name="p_2")
        p2_near = Signal(data.ArrayLayout(signed(PERTURBATION_NEAR_BITS), C), name="p_near_2")
        valid2f, first2, last2, layer0_2, tag2 = Signal(), Signal(), Signal(), Signal(), Signal(tag_shape)
        if isinstance(w_read, EbrRead):  # already registered in the blocks
            m.d.comb += w2.eq(w_read.data)
        else:
            m.d.sync += w2.eq(w_read.data)
        m.d.comb += self.w_rdata.eq(w2)  # W_READ_LATENCY: the host's reads leave from the register
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
            tail_weights, tail_acts, tail_pass = tail_operands(self, m, cfg, pe, mem, bp, x4, h4)
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
            self._bias(m, cfg, pe, layer, o, None if bp is None else bp.issue)
        return _Stage1(p, p2, valid1, update1, addr1, w2)

    def _elaborate_update(self, m, cfg, mem, ctl, s1, ecp5=False):
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
            weight_write(m, w_write, self, valid[-1], addr[-1], new)
        else:  # the ZO update writes layers 1..C only (the stream still replays every word); the tail's write
            self.zo_write = (valid[-1] & (addr[-1] < ctl.zo_end), addr[-1], new)

    def _elaborate_results(self, m, cfg, pe, mem, queue, ctl):
        """The array's results, ``NET_FORWARD_LATENCY`` cycles after a row's last word: a hidden layer's sums
        requantised into a register, written one cycle later to its lane of the hidden buffer; the last
        layer's sums into logit bank ``parity`` (this cycle) and the loss unit (``_loss_unit``: drives
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
        self._loss_unit(m, cfg, pe, out_tag, forward_valid, mem.y_read, queue.rp, ctl)
        if ctl.bp is not None:
            tail_results(self, m, cfg, pe, mem, ctl, out_tag)

    def _elaborate_g(self, m, ctl):
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

    def _bias(self, m, cfg, pe, layer, o, tail_issue=None):
        """The bias memory: one int32 per output of every layer (global output order; host writes while
        idle), read with a row's first word (address ``ACTIVATION_READ_DELAY`` cycles behind the issue, like the
        activations);
        a layer without ``bias`` adds 0."""
        offsets = [sum(l.bias_size for l in cfg.layers[:i]) for i in range(len(cfg.layers))]
        m.submodules.bias_mem = bias_mem = Memory(shape=signed(ACC_BITS), depth=cfg.total_outputs, init=[])
        b_read, b_write = bias_mem.read_port(), bias_mem.write_port()
        m.d.comb += [b_write.addr.eq(self.b_addr), b_write.data.eq(self.b_wdata), b_write.en.eq(self.b_we & ~self.busy)]
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

    def _loss_unit(self, m, cfg, pe, out_tag, forward_valid, y_read, rp, ctl):
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
            tm = self.tail_memories
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
